import { expect } from "vitest";
import { ERROR_STATUS } from "../../src/errors/index.js";
import type { Provision } from "../../src/provision/index.js";
import { createControlApp } from "../../src/proxy/control.js";
import { API_KEY, startTestDms, type TestDms } from "../support/dms.js";
import type { Payload } from "../support/http.js";
import { freePortRange } from "../support/ports.js";
import { until } from "../support/wait.js";

/**
 * Two tenants in sibling domains (`acme` and `globex`), a Read
 * user in each, and an administrator of the whole tree. Every tenant holds
 * every privilege on its own domain and none on the other's.
 */
export const TENANTS = {
  acme: {
    user: "acme-admin",
    reader: "acme-reader",
    thingType: "acme-type",
    thing: "acme-t1",
    serial: "SN-ACME-1",
    group: "acme-group",
  },
  globex: {
    user: "globex-admin",
    reader: "globex-reader",
    thingType: "globex-type",
    thing: "globex-t1",
    serial: "SN-GLOBEX-1",
    group: "globex-group",
  },
} as const;
export type TenantName = keyof typeof TENANTS;
export const ADMIN = "admin";

const tenantUsers = (domain: TenantName): NonNullable<Provision["users"]> => [
  {
    userName: TENANTS[domain].user,
    password: `${TENANTS[domain].user}-pw`,
    role: "ReadWrite",
    homeDomain: domain,
    privileges: { [domain]: ["*.*"] },
  },
  {
    userName: TENANTS[domain].reader,
    password: `${TENANTS[domain].reader}-pw`,
    role: "Read",
    homeDomain: domain,
    privileges: { [domain]: ["*.*"] },
  },
];

export const SECURITY_PROVISION: Provision = {
  apiKeys: [API_KEY],
  domains: [
    { id: "root" },
    { id: "acme", parent: "root", label: "Acme" },
    { id: "globex", parent: "root", label: "Globex" },
  ],
  users: [
    { userName: ADMIN, password: "admin-pw", role: "ReadWrite", homeDomain: "root", privileges: { root: ["*.*"] } },
    {
      userName: "root-reader",
      password: "root-reader-pw",
      role: "Read",
      homeDomain: "root",
      privileges: { root: ["*.*"] },
    },
    ...tenantUsers("acme"),
    ...tenantUsers("globex"),
  ],
  thingTypes: (["acme", "globex"] as const).map((domain) => ({
    id: TENANTS[domain].thingType,
    label: `${domain} tracker`,
    domain,
    resources: [
      { name: "temp", dataType: "long" as const, resourceType: "thing" as const },
      { name: "latlng", dataType: "geo_point" as const, resourceType: "thing" as const },
    ],
  })),
  things: (["acme", "globex"] as const).map((domain) => ({
    thingName: TENANTS[domain].thing,
    thingType: TENANTS[domain].thingType,
    domain,
    serial: TENANTS[domain].serial,
    secret: "dev-pw-0123456789abcdef",
  })),
  thingGroups: (["acme", "globex"] as const).map((domain) => ({
    id: TENANTS[domain].group,
    name: TENANTS[domain].group,
    domain,
    things: [TENANTS[domain].thing],
  })),
};

export interface SecurityDms extends TestDms {
  controlUrl: string;
  /** GET on the proxy control interface as `user`. */
  control(path: string, query: string, user: string, timeoutMs?: number): Promise<Response>;
}

/** A whole dms with every role a REST operation depends on (no MQTT: no operation needs it). */
export async function startSecurityDms(): Promise<SecurityDms> {
  const range = await freePortRange(16);
  const t = await startTestDms({
    provision: SECURITY_PROVISION,
    env: {
      DMS_ROLES: "api,engine,actions,scheduler,proxy",
      DMS_PROXY_DEVICE_PORT: "0",
      DMS_PROXY_CONTROL_PORT: "0",
      DMS_PROXY_PORTS: `${range.first}-${range.last}`,
      DMS_PROXY_HOST: "127.0.0.1",
      // The tenants' webhooks fail on a closed loopback port, so that each owns a dead letter.
      DMS_WEBHOOK_ALLOW_PRIVATE: "true",
    },
  });
  const controlUrl = `http://127.0.0.1:${t.dms.services.proxy!.controlPort}`;
  const control: SecurityDms["control"] = async (path, query, user, timeoutMs = 15_000) =>
    fetch(`${controlUrl}${path}${query ? `?${query}` : ""}`, {
      headers: { "x-api-key": API_KEY, authorization: await t.token(user) },
      signal: AbortSignal.timeout(timeoutMs),
    });
  return { ...t, controlUrl, control };
}

/** One operation of an OpenAPI document, `{name}` path parameters as the document writes them. */
export interface Operation {
  method: string;
  path: string;
  /** `GET /rules/{id}`: how the tests name an operation. */
  key: string;
  spec: OperationSpec;
}

export interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  nullable?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  default?: unknown;
}

export interface ParameterSpec {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: Schema;
}

export interface OperationSpec {
  parameters?: ParameterSpec[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  security?: unknown[];
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OperationSpec>>;
  components?: { schemas?: Record<string, Schema> };
}

const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

export async function openApi(t: TestDms): Promise<OpenApiDocument> {
  const res = await fetch(`${t.url}/openapi.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as OpenApiDocument;
}

/** Every operation the document lists. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, spec] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const m = method.toUpperCase();
      out.push({ method: m, path, key: `${m} ${path}`, spec });
    }
  }
  return out;
}

/** `/rules/:id` (Hono) as `/rules/{id}` (OpenAPI). */
export const openApiPath = (honoPath: string): string => honoPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

/**
 * Every route the REST app answers, by the same key as `operationsOf`
 * (middleware, which Hono lists as method ALL, left out).
 */
export function honoRoutes(t: TestDms): string[] {
  const keys = t.dms.app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${openApiPath(r.path)}`);
  return [...new Set(keys)];
}

/** The routes of the proxy control interface, which has no OpenAPI document: read from the app itself. */
export function controlRoutes(t: TestDms): string[] {
  const services = t.dms.services;
  // Only the routes are read: the app is never served, so it needs no real authentication.
  const deps = {
    authentication: async (_c: unknown, next: () => Promise<void>) => next(),
    things: services.registry,
    logger: services.logger,
  };
  const app = createControlApp(deps, services.proxy!.sessions, "127.0.0.1");
  return [...new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`))];
}

/**
 * The flat error body of DESIGN.md, with the status its key has
 * (`{"message": "Forbidden"}` alone is the gateway's bad-API-key answer).
 */
export function errorShapeProblem(
  status: number,
  body: unknown,
  options: { proxy?: boolean } = {},
): string | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return `body is not an object: ${String(body)}`;
  const b = body as Record<string, unknown>;
  if (typeof b.message !== "string") return "message is not a string";
  // The proxy control interface answers 503 (no port) and 500 with `message` alone, as the interface says.
  if (options.proxy && (status === 503 || status === 500) && Object.keys(b).length === 1) return undefined;
  if (status === 403 && b.message === "Forbidden" && Object.keys(b).length === 1) return undefined;
  if (typeof b.messageKey !== "string") return "messageKey is not a string";
  if (!(b.messageKey in ERROR_STATUS)) return `messageKey ${b.messageKey} is not a key of the service`;
  const extra = Object.keys(b).filter((k) => k !== "message" && k !== "messageKey" && k !== "property");
  if (extra.length > 0) return `unexpected fields ${extra.join(", ")}`;
  if (b.property !== undefined && typeof b.property !== "string") return "property is not a string";
  const expected = ERROR_STATUS[b.messageKey as keyof typeof ERROR_STATUS];
  if (expected !== status) return `status ${status} for key ${b.messageKey}, which has ${expected}`;
  return undefined;
}

/** Fails on a response that is not the interface's error with `key`. */
export async function expectError(res: Response, keys: string | string[], what: string): Promise<Payload> {
  const text = await res.text();
  let body: Payload;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${what}: ${res.status} answered no JSON: ${text.slice(0, 200)}`);
  }
  const wanted = Array.isArray(keys) ? keys : [keys];
  expect(
    { what, status: res.status, key: body?.messageKey, shape: errorShapeProblem(res.status, body) },
    `${what}: ${text.slice(0, 300)}`,
  ).toEqual({
    what,
    status:
      ERROR_STATUS[(wanted.includes(body?.messageKey) ? body.messageKey : wanted[0]) as keyof typeof ERROR_STATUS],
    key: wanted.includes(body?.messageKey) ? body.messageKey : wanted[0],
    shape: undefined,
  });
  return body;
}

export async function ok(res: Response, what: string): Promise<Payload> {
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${text.slice(0, 500)}`);
  return text === "" ? undefined : JSON.parse(text);
}

/** The objects a tenant owns in every area, made through the REST interface as its own user. */
export interface TenantObjects {
  tenant: TenantName;
  ruleId: string;
  jobId: string;
  documentId: string;
  exportJobId: string;
  exportExecutionId: string;
  fileName: string;
  eventId: string;
  thingName: string;
  thingType: string;
  group: string;
  serial: string;
  /** A webhook delivery that ran out of attempts. */
  deliveryId: string;
  /** An observation of the tenant's thing the engine could not take. */
  deadLetterId: number;
}

/**
 * Makes one of everything in `tenant`'s domain: a rule whose EVENT action
 * fires on the observation posted for its thing (so an event exists), a
 * thing job with its document, an instant export job with its execution, a
 * file in the thing's folder and a proxy session on the thing's serial.
 */
export async function makeTenantObjects(t: SecurityDms, tenant: TenantName): Promise<TenantObjects> {
  const { user, thingType, thing, serial, group } = TENANTS[tenant];
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { user, body });
  const closedPort = (await freePortRange(1)).first;

  const rule = await ok(
    await call("POST", "/rules", {
      name: `${tenant} hot`,
      enabled: true,
      category: tenant,
      filter: { domain: tenant, thingType },
      expression: [{ operator: "gt", resource: "temp", value: 30 }],
      threshold: { count: 1, interval: 0 },
      actions: [
        { type: "EVENT", config: { classification: "ALARM", message: `${tenant} hot`, acknowledgmentRequired: true } },
        {
          type: "WEBHOOK",
          config: {
            uri: `http://127.0.0.1:${closedPort}/${tenant}`,
            body: "{}",
            retry: { interval: 1, maxAttempts: 0, backOffRate: 1 },
          },
        },
      ],
    }),
    `${tenant} rule`,
  );

  const ticket = await ok(
    await call("POST", "/thing-jobs/documents", { documentName: `${tenant}-doc`, domain: tenant }),
    `${tenant} job document ticket`,
  );
  const document = JSON.stringify({ operation: "reboot", tenant });
  const put = await fetch(ticket.signedUrl, {
    method: "PUT",
    body: document,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(document)) },
  });
  await ok(put, `${tenant} job document upload`);
  const job = await ok(
    await call("POST", "/thing-jobs/jobs", {
      domain: tenant,
      description: `${tenant} job`,
      jobDocumentId: ticket.documentId,
      targets: { things: [thing] },
      targetSelection: "CONTINUOUS",
    }),
    `${tenant} thing job`,
  );

  const now = Date.now();
  const ingest = await ok(
    await call("POST", "/observations", [
      { thingName: thing, timestamp: now - 60_000, state: { temp: 40, latlng: "59.9,10.7" } },
    ]),
    `${tenant} observation`,
  );
  expect(ingest.accepted).toBe(1);
  await ok(
    await call("POST", "/observations", [{ thingName: thing, timestamp: "not a time", state: { temp: 1 } }]),
    `${tenant} bad observation`,
  );
  const deadLetters = await ok(await call("GET", "/observations/dead-letters"), `${tenant} dead letters`);
  const deadLetter = (deadLetters.deadLetters as Payload[]).find((d) => d.thingName === thing);
  expect(deadLetter, `${tenant} observation dead letter`).toBeDefined();

  const exportJob = await ok(
    await call("POST", "/observations/export/jobs", {
      jobName: `${tenant}-export`,
      type: "instant",
      thingType,
      from: new Date(now - 3_600_000).toISOString(),
      to: new Date(now + 3_600_000).toISOString(),
      resources: ["temp"],
    }),
    `${tenant} export job`,
  );
  let exportExecutionId = "";
  await until(
    async () => {
      const list = await ok(await call("GET", `/observations/export/jobs/${exportJob.id}/executions`), "executions");
      const done = (list.exportJobExecutions as Payload[]).find((e) => e.status === "SUCCEEDED");
      exportExecutionId = done?.id ?? "";
      return exportExecutionId !== "";
    },
    20_000,
    `${tenant} export execution`,
  );

  const fileName = `${tenant}-notes.txt`;
  const upload = await ok(
    await call("GET", `/files/upload-url?${new URLSearchParams({ fileName, thingName: thing })}`),
    `${tenant} upload url`,
  );
  await ok(await fetch(upload.url, { method: "PUT", body: `${tenant} data` }), `${tenant} file upload`);

  /** The id of the first item of a list the tenant's own work fills in the background. */
  const firstId = async (path: string, list: string, what: string): Promise<string> => {
    let id = "";
    await until(
      async () => {
        const answer = await ok(await call("GET", path), what);
        id = (answer[list] as Payload[])[0]?.id ?? "";
        return id !== "";
      },
      30_000,
      `${tenant} ${what}`,
    );
    return id;
  };
  const eventId = await firstId("/events", "events", "event");
  const deliveryId = await firstId("/actions/dead-letters", "deadLetters", "webhook dead letter");

  await ok(
    await t.control("/on", new URLSearchParams({ serial, timeout: "3600" }).toString(), user),
    `${tenant} proxy /on`,
  );

  return {
    tenant,
    ruleId: rule.id,
    jobId: job.jobId,
    documentId: ticket.documentId,
    exportJobId: exportJob.id,
    exportExecutionId,
    fileName,
    eventId,
    thingName: thing,
    thingType,
    group,
    serial,
    deliveryId,
    deadLetterId: deadLetter.id,
  };
}
