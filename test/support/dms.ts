import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/index.js";
import type { Provision } from "../../src/provision/index.js";
import { startDms, type Dms, type StartOptions } from "../../src/service.js";

export const API_KEY = "test-api-key-0001";

/** A small tree and cast most tests can use: root > acme > (east, west), root > other. */
export const BASE_PROVISION: Provision = {
  apiKeys: [API_KEY],
  domains: [
    { id: "root" },
    { id: "acme", parent: "root", label: "Acme" },
    { id: "east", parent: "acme", label: "Acme East" },
    { id: "west", parent: "acme", label: "Acme West" },
    { id: "other", parent: "root", label: "Other" },
  ],
  users: [
    { userName: "admin", password: "admin-pw", role: "ReadWrite", homeDomain: "root", privileges: { root: ["*.*"] } },
    {
      userName: "alice",
      password: "alice-pw",
      role: "ReadWrite",
      homeDomain: "acme",
      privileges: {
        acme: [
          "Domains.*",
          "Users.*",
          "ThingTypes.*",
          "Things.*",
          "ThingGroups.*",
          "Rules.*",
          "ThingJobs.*",
          "Observations.READ",
          "DataExport.*",
          "Files.*",
          "Events.*",
        ],
      },
    },
    {
      userName: "reader",
      password: "reader-pw",
      role: "Read",
      homeDomain: "acme",
      privileges: { acme: ["*.*"] },
    },
    {
      userName: "eastie",
      password: "eastie-pw",
      role: "ReadWrite",
      homeDomain: "east",
      privileges: { east: ["*.*"] },
    },
  ],
  thingTypes: [
    {
      id: "10",
      label: "Tracker",
      domain: "acme",
      resources: [
        { name: "temp", dataType: "long", resourceType: "thing" },
        { name: "latlng", dataType: "geo_point", resourceType: "thing" },
      ],
    },
    {
      id: "20",
      label: "Meter",
      domain: "east",
      resources: [{ name: "power", dataType: "long", resourceType: "thing" }],
    },
  ],
  things: [
    { thingName: "t1", thingType: "10", domain: "acme", serial: "SN1", secret: "dev-pw" },
    { thingName: "t2", thingType: "10", domain: "acme", serial: "SN2", secret: "dev-pw" },
    { thingName: "e1", thingType: "20", domain: "east", serial: "SN-E1", secret: "dev-pw" },
  ],
  thingGroups: [{ id: "g1", name: "fleet", domain: "acme", things: ["t1"] }],
};

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

/** Starts a whole dms on a random port with a fresh data dir and the given provisioning. */
export async function startTestDms(
  options: { env?: Record<string, string>; provision?: Provision; start?: StartOptions; dataDir?: string } = {},
): Promise<TestDms> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "dms-test-"));
  const provision = options.provision ?? BASE_PROVISION;
  for (const u of provision.users ?? []) PASSWORDS.set(u.userName, u.password);
  const provisionFile = join(dataDir, "provision.json");
  writeFileSync(provisionFile, JSON.stringify(provision));
  const config = loadConfig({
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: provisionFile,
    DMS_LOG_LEVEL: "silent",
    DMS_ROLES: "api",
    DMS_JWT_SECRET: "test-secret-test-secret-test-secret",
    ...options.env,
  });
  const dms = await startDms(config, options.start);
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
