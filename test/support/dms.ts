import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/index.js";
import type { Provision } from "../../src/provision/index.js";
import { API_KEY, BASE_PROVISION } from "./provision.js";
import { startDms, type Dms, type StartOptions } from "../../src/service.js";
import { testDatabaseUrl } from "./test-database.js";
import { until } from "./wait.js";

export { API_KEY, BASE_PROVISION } from "./provision.js";

export interface TestDms {
  dms: Dms;
  url: string;
  dataDir: string;
  /** Fetches `path` with the API key and, when `user` is given, that user's token. */
  call(
    method: string,
    path: string,
    options?: { user?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  token(user: string): Promise<string>;
  close(): Promise<void>;
}

const PASSWORDS = new Map<string, string>();

/**
 * Starts a whole dms on a random port with a fresh data dir and the given provisioning, and
 * waits until it takes requests (a Kafka consumer may join its group after `startDms` resolves);
 * `awaitReady: false` returns as soon as it listens and has started its components.
 */
export async function startTestDms(
  options: {
    env?: Record<string, string>;
    provision?: Provision;
    start?: StartOptions;
    dataDir?: string;
    awaitReady?: boolean;
  } = {},
): Promise<TestDms> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "dms-test-"));
  const provision = options.provision ?? BASE_PROVISION;
  for (const u of provision.users ?? []) PASSWORDS.set(u.userName, u.password);
  const provisionFile = join(dataDir, "provision.json");
  writeFileSync(provisionFile, JSON.stringify(provision));
  const databaseUrl = options.env?.DMS_DATABASE_URL === undefined ? await testDatabaseUrl(dataDir) : undefined;
  const config = loadConfig({
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: provisionFile,
    DMS_LOG_LEVEL: "silent",
    DMS_ROLES: "api",
    DMS_JWT_SECRET: "test-secret-test-secret-test-secret",
    ...(databaseUrl && { DMS_DATABASE_URL: databaseUrl }),
    ...options.env,
  });
  const dms = await startDms(config, options.start);
  if (options.awaitReady !== false) await until(() => dms.services.readiness.started(), 90_000, "dms ready");
  const url = dms.url!;
  const tokens = new Map<string, string>();

  const token = async (user: string): Promise<string> => {
    const cached = tokens.get(user);
    if (cached) return cached;
    const res = await fetch(`${url}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": API_KEY },
      body: JSON.stringify({ userName: user, password: PASSWORDS.get(user) }),
    });
    if (res.status !== 200) throw new Error(`login of ${user} failed: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { credentials: { token: string } };
    tokens.set(user, body.credentials.token);
    return body.credentials.token;
  };

  const call: TestDms["call"] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { "x-api-key": API_KEY, ...opts.headers };
    if (opts.user) headers.authorization = await token(opts.user);
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    return fetch(`${url}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body),
    });
  };

  return {
    dms,
    url,
    dataDir,
    call,
    token,
    close: async () => {
      await dms.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
