import { runServiceScript } from "./service-script.js";

/** Enough for a first start that downloads the registry (~110 MB) and then boots it on a busy box. */
export const SCHEMA_REGISTRY_START_TIMEOUT_MS = 300_000;

/**
 * Starts (or reuses) the test schema registry (Apicurio Registry, in memory) and returns the URL of its
 * Confluent-compatible API, e.g. "http://127.0.0.1:8085/apis/ccompat/v7" — the `host` for
 * @kafkajs/confluent-schema-registry's `SchemaRegistry` and the value for `SCHEMA_REGISTRY_URL`.
 * Honours the env vars of scripts/schema-registry.sh (SCHEMA_REGISTRY_PORT, ...). Call it from a
 * `beforeAll` with SCHEMA_REGISTRY_START_TIMEOUT_MS as the hook timeout.
 */
export async function startSchemaRegistry(): Promise<string> {
  return runServiceScript("schema-registry.sh", "start", "SCHEMA_REGISTRY_URL");
}

/** Stops the test schema registry; everything registered in it is gone. */
export async function stopSchemaRegistry(): Promise<void> {
  await runServiceScript("schema-registry.sh", "stop");
}
