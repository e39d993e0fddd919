/** Nothing global yet: tests that need Kafka start the shared broker through test/support/kafka.ts. */
export default async function setup(): Promise<void> {}
