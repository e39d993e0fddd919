// The entry of the Kafka fetch thread (plain JavaScript: see ../../load-thread.mjs).
import { loadThread } from "../../load-thread.mjs";

await loadThread("kafka-fetch-thread", import.meta.url);
