import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const script = fileURLToPath(new URL("../../scripts/schema-registry.sh", import.meta.url));

/** Enough for a first start that downloads the registry (~110 MB) and then boots it on a busy box. */
export const SCHEMA_REGISTRY_START_TIMEOUT_MS = 300_000;

interface ExecError extends Error {
  stdout?: string;
  stderr?: string;
}

async function runScript(command: "start" | "stop"): Promise<string> {
  try {
    const { stdout } = await execFileAsync("bash", [script, command], {
      cwd: repoRoot,
      env: process.env,
      // The script bounds its own wait (SCHEMA_REGISTRY_START_TIMEOUT); this is only a backstop.
      timeout: 600_000,
      maxBuffer: 10 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as ExecError;
    throw new Error(`scripts/schema-registry.sh ${command} failed: ${e.message}\n${e.stderr ?? ""}`, {
      cause: err,
    });
  }
}

/**
 * Starts (or reuses) the test schema registry (Apicurio Registry, in memory) and returns the URL of its
 * Confluent-compatible API, e.g. "http://127.0.0.1:8085/apis/ccompat/v7" — the `host` for
 * @kafkajs/confluent-schema-registry's `SchemaRegistry` and the value for `SCHEMA_REGISTRY_URL`.
 * Honours the env vars of scripts/schema-registry.sh (SCHEMA_REGISTRY_PORT, ...). Call it from a
 * `beforeAll` with SCHEMA_REGISTRY_START_TIMEOUT_MS as the hook timeout.
 */
export async function startSchemaRegistry(): Promise<string> {
  const stdout = await runScript("start");
  const line = stdout
    .trim()
    .split("\n")
    .reverse()
    .find((l) => l.startsWith("SCHEMA_REGISTRY_URL="));
  if (!line) throw new Error(`scripts/schema-registry.sh start printed no SCHEMA_REGISTRY_URL line:\n${stdout}`);
  return line.slice("SCHEMA_REGISTRY_URL=".length).trim();
}

/** Stops the test schema registry; everything registered in it is gone. */
export async function stopSchemaRegistry(): Promise<void> {
  await runScript("stop");
}
