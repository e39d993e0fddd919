// Readiness probe for scripts/kafka.sh: exit 0 when the broker answers a metadata request (and, with
// --groups, a consumer-group request too), 1 otherwise. Uses the repo's kafkajs, i.e. the same client
// the service and the tests use. Usage: node scripts/kafka-probe.mjs 127.0.0.1:9092 [--groups]
import process from "node:process";
import { Kafka, logLevel } from "kafkajs";

const [brokers, mode] = process.argv.slice(2);
if (!brokers) {
  process.stderr.write("usage: kafka-probe.mjs <brokers> [--groups]\n");
  process.exit(2);
}

const kafka = new Kafka({
  clientId: "dms-kafka-probe",
  brokers: brokers.split(","),
  logLevel: logLevel.NOTHING,
  connectionTimeout: 2000,
  requestTimeout: 5000,
  // The caller polls; one attempt per call keeps each probe short.
  retry: { retries: 0 },
});
const admin = kafka.admin();
try {
  await admin.connect();
  await admin.listTopics();
  // Finds the group coordinator; fails while __consumer_offsets is still being created/loaded.
  if (mode === "--groups") await admin.describeGroups(["dms-kafka-probe"]);
  process.exitCode = 0;
} catch {
  process.exitCode = 1;
} finally {
  await admin.disconnect().catch(() => {});
}
