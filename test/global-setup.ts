// Placeholder so vitest.config.ts's globalSetup resolves; the lead replaces it.
export default async function setup(): Promise<void> {}
