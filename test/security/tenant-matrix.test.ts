import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Payload } from "../support/http.js";
import {
  controlRoutes,
  errorShapeProblem,
  makeTenantObjects,
  ok,
  openApi,
  operationsOf,
  startSecurityDms,
  TENANTS,
  type OpenApiDocument,
  type SecurityDms,
  type TenantName,
  type TenantObjects,
} from "./support.js";

/**
 * Tenant matrix: two tenants in sibling domains (acme, globex),
 * each with one object of every area. For every operation of /openapi.json,
 * each tenant's administrator and Read user call it on the other tenant's
 * objects (or into the other tenant's domain): refused with the interface's
 * key, lists and searches hold nothing of the other tenant, and the objects
 * read back by their owner are unchanged.
 */

/** What one call must give. */
type Expectation =
  | { refused: string[] }
  /** A successful read (or a refusal): nothing of the victim in the answer. */
  | { noLeak: true }
  /** Anything else: a message when the answer is wrong. */
  | { check: (status: number, body: Payload) => string | undefined };

interface Probe {
  method: string;
  path: string;
  body?: unknown;
  expect: Expectation;
}

interface Sides {
  /** The calling tenant's own objects. */
  a: TenantObjects;
  /** The other tenant's objects, which must stay out of reach. */
  v: TenantObjects;
}

type Entry = ((s: Sides) => Probe[]) | { exempt: string };

const NOT_AUTHORIZED = ["NOT_AUTHORIZED"];
const refused = (...keys: string[]): Expectation => ({ refused: keys.length ? keys : NOT_AUTHORIZED });
const noLeak: Expectation = { noLeak: true };
const get = (path: string, expect: Expectation = noLeak): Probe => ({ method: "GET", path, expect });
const q = (params: Record<string, string>): string => `?${new URLSearchParams(params)}`;

function ruleBody(domain: string, thingType: string, extra: Record<string, unknown> = {}): Payload {
  return {
    name: "intruder",
    enabled: true,
    filter: { domain, thingType },
    expression: [{ operator: "gt", resource: "temp", value: 0 }],
    threshold: { count: 1, interval: 0 },
    actions: [{ type: "EVENT", config: { classification: "ALARM", message: "intruder" } }],
    ...extra,
  };
}

function jobBody(domain: string, jobDocumentId: string, targets: Record<string, string[]>): Payload {
  return { domain, description: "intruder", jobDocumentId, targets, targetSelection: "CONTINUOUS" };
}

function exportBody(target: Record<string, unknown>): Payload {
  const now = Date.now();
  return {
    jobName: "intruder",
    type: "instant",
    from: new Date(now - 3_600_000).toISOString(),
    to: new Date(now).toISOString(),
    resources: ["temp"],
    ...target,
  };
}

const findAll = { query: { size: 100, query: { range: { timestamp: { gte: 0 } } } } };

/**
 * A bulk write whose items all cross into the other tenant: a Read user is
 * refused the whole call, an administrator gets one error per item with the
 * interface's key and nothing written.
 */
function bulkRefused(done: "created" | "updated", items: { keys: string[] }[]): Expectation {
  return {
    check: (status, body) => {
      if (status === 403 && body?.messageKey === "NOT_AUTHORIZED") return undefined;
      if (status !== 200) return `answered ${status}: ${JSON.stringify(body).slice(0, 300)}`;
      if (body[done]?.length !== 0) return `wrote ${JSON.stringify(body[done]).slice(0, 300)}`;
      const errors = (body.errors ?? []) as Payload[];
      const wrong = items.flatMap(({ keys }, index) => {
        const error = errors.find((e) => e.index === index);
        return error && keys.includes(error.messageKey) ? [] : [`item ${index}: ${JSON.stringify(error)}`];
      });
      return wrong.length ? `not refused with the expected key: ${wrong.join("; ")}` : undefined;
    },
  };
}

/**
 * A public document (no credentials): it must answer the same to anyone and
 * hold nothing of any tenant, neither the caller's nor the other's.
 */
const publicNoTenantData: Expectation = {
  check: (status, body) => {
    const text = JSON.stringify(body ?? null);
    if (status !== 200 && !(status === 404 && body?.messageKey === "NOT_FOUND")) return `answered ${status}: ${text}`;
    const leaked = [...markersOf(objects.acme), ...markersOf(objects.globex)].filter((m) => text.includes(m));
    return leaked.length
      ? `a public document holds tenant data: ${leaked.join(", ")}: ${text.slice(0, 300)}`
      : undefined;
  },
};

/**
 * Every operation of /openapi.json with the calls that try it across the
 * boundary. A new operation without an entry fails the first test.
 */
const MATRIX: Record<string, Entry> = {
  "POST /auth/login": { exempt: "credentials of the caller itself; no tenant object is named" },
  "POST /auth/refresh": { exempt: "credentials of the caller itself; no tenant object is named" },

  "GET /admin/domains": () => [get("/admin/domains")],
  "POST /admin/domains": ({ v }) => [
    { method: "POST", path: "/admin/domains", body: { id: "intruder-sub", parent: v.tenant }, expect: refused() },
  ],
  "GET /admin/domains/{id}": ({ v }) => [
    get(`/admin/domains/${v.tenant}`, refused("NOT_AUTHORIZED", "DOMAIN_NOT_FOUND")),
  ],
  "PATCH /admin/domains/{id}": ({ v }) => [
    {
      method: "PATCH",
      path: `/admin/domains/${v.tenant}`,
      body: { label: "pwned" },
      expect: refused("NOT_AUTHORIZED", "DOMAIN_NOT_FOUND"),
    },
  ],
  "DELETE /admin/domains/{id}": ({ v }) => [
    { method: "DELETE", path: `/admin/domains/${v.tenant}`, expect: refused("NOT_AUTHORIZED", "DOMAIN_NOT_FOUND") },
  ],

  "GET /admin/users": () => [get("/admin/users")],
  "POST /admin/users": ({ a, v }) => [
    {
      method: "POST",
      path: "/admin/users",
      body: { userName: "intruder", password: "intruder-pw", role: "ReadWrite", homeDomain: v.tenant },
      expect: refused(),
    },
    {
      method: "POST",
      path: "/admin/users",
      body: {
        userName: "intruder2",
        password: "intruder-pw",
        role: "ReadWrite",
        homeDomain: a.tenant,
        privileges: { [v.tenant]: ["Rules.READ"] },
      },
      expect: refused(),
    },
  ],
  "GET /admin/users/{userName}": ({ v }) => [
    get(`/admin/users/${TENANTS[v.tenant].reader}`, refused("NOT_AUTHORIZED", "USER_NOT_FOUND")),
  ],
  "PATCH /admin/users/{userName}": ({ a, v }) => [
    {
      method: "PATCH",
      path: `/admin/users/${TENANTS[v.tenant].reader}`,
      body: { password: "taken-over-pw" },
      expect: refused("NOT_AUTHORIZED", "USER_NOT_FOUND"),
    },
    {
      // Granting the own Read user privileges on the other domain.
      method: "PATCH",
      path: `/admin/users/${TENANTS[a.tenant].reader}`,
      body: { privileges: { [a.tenant]: ["*.*"], [v.tenant]: ["*.*"] } },
      expect: refused(),
    },
  ],
  "DELETE /admin/users/{userName}": ({ v }) => [
    {
      method: "DELETE",
      path: `/admin/users/${TENANTS[v.tenant].reader}`,
      expect: refused("NOT_AUTHORIZED", "USER_NOT_FOUND"),
    },
  ],

  // API keys belong to the whole service (root), not to a tenant: a tenant may not manage them at all.
  "GET /admin/api-keys": () => [get("/admin/api-keys", refused())],
  "POST /admin/api-keys": () => [
    { method: "POST", path: "/admin/api-keys", body: { label: "intruder" }, expect: refused() },
  ],
  "DELETE /admin/api-keys/{id}": () => [
    { method: "DELETE", path: "/admin/api-keys/1", expect: refused("NOT_AUTHORIZED", "API_KEY_NOT_FOUND") },
  ],

  "GET /admin/thing-types": ({ v }) => [get("/admin/thing-types"), get(`/admin/thing-types${q({ domain: v.tenant })}`)],
  "POST /admin/thing-types": ({ v }) => [
    { method: "POST", path: "/admin/thing-types", body: { id: "intruder-type", domain: v.tenant }, expect: refused() },
  ],
  "GET /admin/thing-types/{id}": ({ v }) => [
    get(`/admin/thing-types/${v.thingType}`, refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND")),
  ],
  "PATCH /admin/thing-types/{id}": ({ a, v }) => [
    {
      method: "PATCH",
      path: `/admin/thing-types/${v.thingType}`,
      body: { label: "pwned" },
      expect: refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND"),
    },
    // Moving the own type into the other domain.
    { method: "PATCH", path: `/admin/thing-types/${a.thingType}`, body: { domain: v.tenant }, expect: refused() },
  ],
  "DELETE /admin/thing-types/{id}": ({ v }) => [
    {
      method: "DELETE",
      path: `/admin/thing-types/${v.thingType}`,
      expect: refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND"),
    },
  ],

  "GET /admin/things": ({ v }) => [
    get("/admin/things"),
    get(`/admin/things${q({ domain: v.tenant })}`),
    get(`/admin/things${q({ thingType: v.thingType })}`),
  ],
  "POST /admin/things": ({ a, v }) => [
    {
      method: "POST",
      path: "/admin/things",
      body: { thingName: "intruder-thing", thingType: a.thingType, domain: v.tenant },
      expect: refused(),
    },
    {
      method: "POST",
      path: "/admin/things",
      body: { thingName: "intruder-thing", thingType: v.thingType, domain: a.tenant },
      expect: refused("THING_TYPE_NOT_FOUND"),
    },
  ],
  "GET /admin/things/{thingName}": ({ v }) => [
    get(`/admin/things/${v.thingName}`, refused("NOT_AUTHORIZED", "THING_NOT_FOUND")),
  ],
  "PATCH /admin/things/{thingName}": ({ a, v }) => [
    {
      method: "PATCH",
      path: `/admin/things/${v.thingName}`,
      body: { secret: "taken-over-0123456789abcdef" },
      expect: refused("NOT_AUTHORIZED", "THING_NOT_FOUND"),
    },
    { method: "PATCH", path: `/admin/things/${a.thingName}`, body: { domain: v.tenant }, expect: refused() },
    {
      method: "PATCH",
      path: `/admin/things/${a.thingName}`,
      body: { thingType: v.thingType },
      expect: refused("THING_TYPE_NOT_FOUND"),
    },
    {
      // Taking over the other thing's serial would take over its proxy sessions and device connections.
      method: "PATCH",
      path: `/admin/things/${a.thingName}`,
      body: { serial: v.serial },
      expect: refused("CONFLICT", "ALREADY_EXISTS", "INVALID_ARGUMENTS"),
    },
  ],
  "DELETE /admin/things/{thingName}": ({ v }) => [
    { method: "DELETE", path: `/admin/things/${v.thingName}`, expect: refused("NOT_AUTHORIZED", "THING_NOT_FOUND") },
  ],

  // Public: MIC clients read these before they log in. No tenant object is named and none may be in them.
  "GET /manifest": () => [
    get("/manifest", publicNoTenantData),
    get(`/manifest${q({ hostname: "acme.example" })}`, publicNoTenantData),
  ],
  "GET /metadata/manifest": () => [get("/metadata/manifest", publicNoTenantData)],

  "GET /user": () => [get("/user")],
  "GET /users/{userName}": ({ v }) => [
    get(`/users/${TENANTS[v.tenant].reader}`, refused("NOT_AUTHORIZED", "USER_NOT_FOUND")),
    get(`/users/${TENANTS[v.tenant].user}`, refused("NOT_AUTHORIZED", "USER_NOT_FOUND")),
  ],
  "POST /users": ({ a, v }) => [
    {
      method: "POST",
      path: "/users",
      body: { userName: "intruder", password: "intruder-pw", roleName: "ReadWrite", domainName: v.tenant },
      expect: refused(),
    },
    {
      method: "POST",
      path: "/users",
      body: {
        userName: "intruder2",
        password: "intruder-pw",
        roleName: "ReadWrite",
        domainName: a.tenant,
        privileges: { [a.tenant]: ["Rules.READ"], [v.tenant]: ["Rules.READ"] },
      },
      expect: refused(),
    },
  ],

  "GET /thingtypes": () => [get("/thingtypes")],
  "GET /thingtypes/{id}": ({ v }) => [
    get(`/thingtypes/${v.thingType}`, refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND")),
  ],

  "POST /things": ({ a, v }) => [
    {
      method: "POST",
      path: "/things",
      body: { thingName: "intruder-thing", thingType: a.thingType, domain: v.tenant },
      expect: refused(),
    },
    {
      method: "POST",
      path: "/things",
      body: { thingName: "intruder-thing", thingType: v.thingType, domain: a.tenant },
      expect: refused("THING_TYPE_NOT_FOUND"),
    },
    {
      // The other's thing name under the own domain would take over its identity.
      method: "POST",
      path: "/things",
      body: { thingName: v.thingName, thingType: a.thingType, domain: a.tenant },
      expect: refused("ALREADY_EXISTS"),
    },
  ],
  "GET /things/{thingName}": ({ v }) => [get(`/things/${v.thingName}`, refused("NOT_AUTHORIZED", "THING_NOT_FOUND"))],
  "POST /things/find": ({ v }) => [
    { method: "POST", path: "/things/find", body: { query: { size: 100 } }, expect: noLeak },
    {
      method: "POST",
      path: "/things/find",
      body: { query: { size: 100, query: { term: { domain: v.tenant } } } },
      expect: noLeak,
    },
    {
      method: "POST",
      path: "/things/find",
      body: { query: { size: 0, aggs: { domains: { terms: { field: "domain" } } } } },
      expect: noLeak,
    },
  ],

  "POST /admin/things/bulk": ({ a, v }) => [
    {
      method: "POST",
      path: "/admin/things/bulk",
      body: {
        things: [
          { thingName: "intruder-bulk-1", thingType: a.thingType, domain: v.tenant },
          { thingName: "intruder-bulk-2", thingType: v.thingType, domain: a.tenant },
          { thingName: v.thingName, thingType: a.thingType, domain: a.tenant },
        ],
      },
      expect: bulkRefused("created", [
        { keys: NOT_AUTHORIZED },
        { keys: ["THING_TYPE_NOT_FOUND"] },
        { keys: ["ALREADY_EXISTS"] },
      ]),
    },
  ],
  "PATCH /admin/things": ({ a, v }) => [
    {
      method: "PATCH",
      path: "/admin/things",
      body: {
        things: [
          { thingName: v.thingName, label: "pwned" },
          { thingName: v.thingName, domain: a.tenant },
          { thingName: a.thingName, domain: v.tenant },
          { thingName: a.thingName, thingType: v.thingType },
          { thingName: a.thingName, serial: v.serial },
        ],
      },
      expect: bulkRefused("updated", [
        { keys: ["NOT_AUTHORIZED", "THING_NOT_FOUND"] },
        { keys: ["NOT_AUTHORIZED", "THING_NOT_FOUND"] },
        { keys: NOT_AUTHORIZED },
        { keys: ["THING_TYPE_NOT_FOUND"] },
        { keys: ["CONFLICT", "ALREADY_EXISTS", "INVALID_ARGUMENTS"] },
      ]),
    },
  ],

  "GET /admin/thing-groups": () => [get("/admin/thing-groups")],
  "POST /admin/thing-groups": ({ a, v }) => [
    {
      method: "POST",
      path: "/admin/thing-groups",
      body: { id: "intruder-group", domain: v.tenant },
      expect: refused(),
    },
    {
      method: "POST",
      path: "/admin/thing-groups",
      body: { id: "intruder-group", domain: a.tenant, things: [v.thingName] },
      expect: refused("THING_NOT_FOUND"),
    },
  ],
  "GET /admin/thing-groups/{id}": ({ v }) => [
    get(`/admin/thing-groups/${v.group}`, refused("NOT_AUTHORIZED", "THING_GROUP_NOT_FOUND")),
  ],
  "PATCH /admin/thing-groups/{id}": ({ a, v }) => [
    {
      method: "PATCH",
      path: `/admin/thing-groups/${v.group}`,
      body: { name: "pwned" },
      expect: refused("NOT_AUTHORIZED", "THING_GROUP_NOT_FOUND"),
    },
    { method: "PATCH", path: `/admin/thing-groups/${a.group}`, body: { domain: v.tenant }, expect: refused() },
  ],
  "DELETE /admin/thing-groups/{id}": ({ v }) => [
    {
      method: "DELETE",
      path: `/admin/thing-groups/${v.group}`,
      expect: refused("NOT_AUTHORIZED", "THING_GROUP_NOT_FOUND"),
    },
  ],
  "POST /admin/thing-groups/{id}/things": ({ a, v }) => [
    {
      method: "POST",
      path: `/admin/thing-groups/${v.group}/things`,
      body: { things: [a.thingName] },
      expect: refused("NOT_AUTHORIZED", "THING_GROUP_NOT_FOUND"),
    },
    {
      method: "POST",
      path: `/admin/thing-groups/${a.group}/things`,
      body: { things: [v.thingName] },
      expect: refused("THING_NOT_FOUND"),
    },
  ],
  "DELETE /admin/thing-groups/{id}/things/{thingName}": ({ a, v }) => [
    {
      method: "DELETE",
      path: `/admin/thing-groups/${v.group}/things/${v.thingName}`,
      expect: refused("NOT_AUTHORIZED", "THING_GROUP_NOT_FOUND"),
    },
    {
      method: "DELETE",
      path: `/admin/thing-groups/${a.group}/things/${v.thingName}`,
      expect: refused("THING_NOT_FOUND"),
    },
  ],

  "GET /files": ({ v }) => [
    get(`/files${q({ listAll: "true" })}`),
    get(`/files${q({ thingName: v.thingName })}`, refused("NOT_AUTHORIZED", "THING_NOT_FOUND")),
    get(`/files${q({ thingType: v.thingType })}`, refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND")),
  ],
  "GET /files/download-url": ({ a, v }) => [
    get(
      `/files/download-url${q({ fileName: v.fileName, thingName: v.thingName })}`,
      refused("NOT_AUTHORIZED", "THING_NOT_FOUND"),
    ),
    // Out of the own folder into the other's.
    get(
      `/files/download-url${q({ fileName: `../${v.thingName}/${v.fileName}`, thingName: a.thingName })}`,
      refused("INVALID_ARGUMENTS"),
    ),
  ],
  "GET /files/upload-url": ({ a, v }) => [
    get(
      `/files/upload-url${q({ fileName: v.fileName, thingName: v.thingName })}`,
      refused("NOT_AUTHORIZED", "THING_NOT_FOUND"),
    ),
    get(
      `/files/upload-url${q({ fileName: `../${v.thingName}/${v.fileName}`, thingName: a.thingName })}`,
      refused("INVALID_ARGUMENTS"),
    ),
  ],
  "DELETE /files": ({ a, v }) => [
    {
      method: "DELETE",
      path: `/files${q({ fileName: v.fileName, thingName: v.thingName })}`,
      expect: refused("NOT_AUTHORIZED", "THING_NOT_FOUND"),
    },
    {
      method: "DELETE",
      path: `/files${q({ fileName: `../${v.thingName}/${v.fileName}`, thingName: a.thingName })}`,
      expect: refused("INVALID_ARGUMENTS"),
    },
  ],

  "POST /search": ({ v }) => [
    { method: "POST", path: "/search", body: { term: "" }, expect: noLeak },
    { method: "POST", path: "/search", body: { term: v.tenant }, expect: noLeak },
    { method: "POST", path: "/search", body: { term: "", filter: { topDomain: v.tenant } }, expect: noLeak },
    { method: "POST", path: "/search", body: { term: "", filter: { thingType: v.thingType } }, expect: noLeak },
  ],

  "POST /observations": ({ v }) => [
    {
      method: "POST",
      path: "/observations",
      body: [{ thingName: v.thingName, timestamp: Date.now(), state: { temp: 99 } }],
      expect: {
        check: (status, body) =>
          (status === 200 && body.accepted === 0 && body.rejected?.[0]?.reason === "NOT_AUTHORIZED") ||
          (status === 403 && body.messageKey === "NOT_AUTHORIZED")
            ? undefined
            : "an observation for the other tenant's thing was not refused as NOT_AUTHORIZED",
      },
    },
  ],
  "GET /observations/dead-letters": () => [get("/observations/dead-letters")],
  "POST /observations/find": ({ v }) => [
    { method: "POST", path: "/observations/find", body: findAll, expect: noLeak },
    {
      method: "POST",
      path: "/observations/find",
      body: { ...findAll, queryScope: { thingTypes: [v.thingType] } },
      expect: noLeak,
    },
  ],

  "GET /rules": () => [get("/rules")],
  "POST /rules": ({ a, v }) => [
    { method: "POST", path: "/rules", body: ruleBody(v.tenant, v.thingType), expect: refused() },
    {
      method: "POST",
      path: "/rules",
      body: ruleBody(a.tenant, v.thingType),
      expect: refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND"),
    },
  ],
  "PATCH /rules": ({ v }) => [
    {
      method: "PATCH",
      path: "/rules",
      body: { rules: [{ id: v.ruleId, enabled: false }] },
      expect: {
        check: (status, body) =>
          status === 200 && body.updated?.length === 0 && body.errors?.[0]?.id === v.ruleId
            ? undefined
            : "the other tenant's rule was not reported in errors[]",
      },
    },
  ],
  "POST /rules/test": ({ v }) => [
    {
      method: "POST",
      path: "/rules/test",
      body: {
        rule: ruleBody(v.tenant, v.thingType),
        observations: [{ thingName: v.thingName, state: { temp: 1 } }],
      },
      expect: refused("NOT_AUTHORIZED", "THING_TYPE_NOT_FOUND"),
    },
  ],
  "GET /rules/{id}": ({ v }) => [get(`/rules/${v.ruleId}`, refused("NOT_AUTHORIZED", "RULE_NOT_FOUND"))],
  "PUT /rules/{id}": ({ a, v }) => [
    {
      method: "PUT",
      path: `/rules/${v.ruleId}`,
      body: ruleBody(v.tenant, v.thingType),
      expect: refused("NOT_AUTHORIZED", "RULE_NOT_FOUND"),
    },
    {
      method: "PUT",
      path: `/rules/${v.ruleId}`,
      body: ruleBody(a.tenant, a.thingType),
      expect: refused("NOT_AUTHORIZED", "RULE_NOT_FOUND"),
    },
    // Moving the own rule into the other domain.
    { method: "PUT", path: `/rules/${a.ruleId}`, body: ruleBody(v.tenant, v.thingType), expect: refused() },
  ],
  "DELETE /rules/{id}": ({ v }) => [
    { method: "DELETE", path: `/rules/${v.ruleId}`, expect: refused("NOT_AUTHORIZED", "RULE_NOT_FOUND") },
  ],

  "GET /actions/dead-letters": () => [get("/actions/dead-letters")],
  "POST /actions/dead-letters/{id}/retry": ({ v }) => [
    {
      method: "POST",
      path: `/actions/dead-letters/${v.deliveryId}/retry`,
      // As a missing one: sequential ids must not tell another tenant what exists.
      expect: refused("NOT_FOUND"),
    },
  ],

  "GET /events": ({ v }) => [get("/events"), get(`/events${q({ thingName: v.thingName })}`)],
  "POST /events/{id}/ack": ({ v }) => [
    // As a missing one: sequential ids must not tell another tenant what exists.
    { method: "POST", path: `/events/${v.eventId}/ack`, expect: refused("NOT_FOUND") },
  ],

  "POST /observations/export/jobs": ({ v }) => [
    {
      method: "POST",
      path: "/observations/export/jobs",
      body: exportBody({ thingType: v.thingType }),
      expect: refused("THING_TYPE_NOT_FOUND", "NOT_AUTHORIZED"),
    },
    {
      method: "POST",
      path: "/observations/export/jobs",
      body: exportBody({ things: [v.thingName] }),
      expect: refused("THING_NOT_FOUND", "NOT_AUTHORIZED"),
    },
  ],
  "GET /observations/export/jobs": () => [get("/observations/export/jobs")],
  "GET /observations/export/jobs/{id}": ({ v }) => [
    get(`/observations/export/jobs/${v.exportJobId}`, refused("EXPORT_JOB_NOT_FOUND", "NOT_AUTHORIZED")),
  ],
  "PATCH /observations/export/jobs/{id}": ({ v }) => [
    {
      method: "PATCH",
      path: `/observations/export/jobs/${v.exportJobId}`,
      body: { jobName: "pwned" },
      expect: refused("EXPORT_JOB_NOT_FOUND", "NOT_AUTHORIZED"),
    },
  ],
  "DELETE /observations/export/jobs/{id}": ({ v }) => [
    {
      method: "DELETE",
      path: `/observations/export/jobs/${v.exportJobId}`,
      expect: refused("EXPORT_JOB_NOT_FOUND", "NOT_AUTHORIZED"),
    },
  ],
  "GET /observations/export/jobs/{id}/executions": ({ v }) => [
    get(`/observations/export/jobs/${v.exportJobId}/executions`, refused("EXPORT_JOB_NOT_FOUND", "NOT_AUTHORIZED")),
  ],
  "GET /observations/export/executions": () => [get("/observations/export/executions")],
  "GET /observations/export/executions/{id}": ({ v }) => [
    get(
      `/observations/export/executions/${v.exportExecutionId}`,
      refused("EXPORT_EXECUTION_NOT_FOUND", "NOT_AUTHORIZED"),
    ),
  ],
  "POST /observations/export/executions/{id}": ({ v }) => [
    {
      method: "POST",
      path: `/observations/export/executions/${v.exportExecutionId}`,
      expect: refused("EXPORT_EXECUTION_NOT_FOUND", "NOT_AUTHORIZED"),
    },
  ],
  "GET /observations/export/executions/{id}/download": ({ v }) => [
    get(
      `/observations/export/executions/${v.exportExecutionId}/download`,
      refused("EXPORT_EXECUTION_NOT_FOUND", "NOT_AUTHORIZED"),
    ),
  ],
  // Credentials do not open it: only the signature of a download URL its owner was given.
  "GET /storage/exports/{id}": ({ v }) => [
    get(`/storage/exports/${v.exportExecutionId}`, refused("FORBIDDEN", "NOT_AUTHORIZED")),
  ],

  "POST /thing-jobs/documents": ({ v }) => [
    {
      method: "POST",
      path: "/thing-jobs/documents",
      body: { documentName: "intruder", domain: v.tenant },
      expect: refused(),
    },
  ],
  "POST /thing-jobs/jobs": ({ a, v }) => [
    {
      method: "POST",
      path: "/thing-jobs/jobs",
      body: jobBody(v.tenant, v.documentId, { things: [v.thingName] }),
      expect: refused(),
    },
    {
      // The other tenant's job document under the own domain.
      method: "POST",
      path: "/thing-jobs/jobs",
      body: jobBody(a.tenant, v.documentId, { things: [a.thingName] }),
      expect: refused("FILE_NOT_FOUND", "NOT_AUTHORIZED", "INVALID_ARGUMENTS"),
    },
    {
      method: "POST",
      path: "/thing-jobs/jobs",
      body: jobBody(a.tenant, a.documentId, { things: [v.thingName] }),
      expect: refused("THING_NOT_FOUND"),
    },
    {
      method: "POST",
      path: "/thing-jobs/jobs",
      body: jobBody(a.tenant, a.documentId, { groups: [v.group] }),
      expect: refused("THING_GROUP_NOT_FOUND"),
    },
  ],
  "GET /thing-jobs/jobs": ({ v }) => [
    get("/thing-jobs/jobs"),
    get(`/thing-jobs/jobs${q({ group: v.group })}`, refused("THING_GROUP_NOT_FOUND", "NOT_AUTHORIZED")),
  ],
  "PATCH /thing-jobs/jobs/{jobId}": ({ v }) => [
    {
      method: "PATCH",
      path: `/thing-jobs/jobs/${v.jobId}`,
      body: { comment: "pwned" },
      expect: refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND"),
    },
  ],
  "GET /thing-jobs/jobs/{jobId}": ({ v }) => [
    get(`/thing-jobs/jobs/${v.jobId}`, refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND")),
  ],
  "DELETE /thing-jobs/jobs/{jobId}": ({ v }) => [
    {
      method: "DELETE",
      path: `/thing-jobs/jobs/${v.jobId}?force=true`,
      expect: refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND"),
    },
  ],
  "GET /thing-jobs/jobs/{jobId}/job-executions": ({ v }) => [
    get(`/thing-jobs/jobs/${v.jobId}/job-executions`, refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND")),
  ],
  "POST /thing-jobs/jobs/{jobId}/targets": ({ a, v }) => [
    {
      method: "POST",
      path: `/thing-jobs/jobs/${v.jobId}/targets`,
      body: { targets: [a.group] },
      expect: refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND"),
    },
    {
      method: "POST",
      path: `/thing-jobs/jobs/${a.jobId}/targets`,
      body: { targets: [v.group] },
      expect: refused("THING_GROUP_NOT_FOUND", "NOT_AUTHORIZED"),
    },
  ],
  "GET /thing-jobs/jobs/{jobId}/job-executions/{thingName}": ({ a, v }) => [
    get(`/thing-jobs/jobs/${v.jobId}/job-executions/${v.thingName}`, refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND")),
    // The own job with the other's thing: no execution of it can be there.
    get(
      `/thing-jobs/jobs/${a.jobId}/job-executions/${v.thingName}`,
      refused("THING_NOT_FOUND", "THING_JOB_NOT_FOUND", "NOT_FOUND", "NOT_AUTHORIZED"),
    ),
  ],
  "PATCH /thing-jobs/jobs/{jobId}/job-executions/{thingName}": ({ v }) => [
    {
      method: "PATCH",
      path: `/thing-jobs/jobs/${v.jobId}/job-executions/${v.thingName}?force=true`,
      expect: refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND"),
    },
  ],
  "DELETE /thing-jobs/jobs/{jobId}/job-executions/{thingName}/executionNumber/{executionNumber}": ({ v }) => [
    {
      method: "DELETE",
      path: `/thing-jobs/jobs/${v.jobId}/job-executions/${v.thingName}/executionNumber/1?force=true`,
      expect: refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND"),
    },
  ],
  "GET /thing-jobs/documents/{jobId}": ({ v }) => [
    get(`/thing-jobs/documents/${v.jobId}`, refused("NOT_AUTHORIZED", "THING_JOB_NOT_FOUND")),
  ],
};

/** Proxy control has no OpenAPI document; its routes are read from the control app. */
const CONTROL_MATRIX: Record<string, (s: Sides) => { query: Record<string, string>; keys: string[] }[]> = {
  "GET /on": ({ v }) => [{ query: { serial: v.serial, timeout: "60" }, keys: ["NOT_AUTHORIZED", "THING_NOT_FOUND"] }],
  "GET /off": ({ v }) => [{ query: { serial: v.serial }, keys: ["NOT_AUTHORIZED", "THING_NOT_FOUND"] }],
  "GET /status": ({ v }) => [{ query: { serial: v.serial }, keys: ["NOT_AUTHORIZED", "THING_NOT_FOUND"] }],
};

let t: SecurityDms;
let doc: OpenApiDocument;
const objects = {} as Record<TenantName, TenantObjects>;
const before = {} as Record<TenantName, Payload>;

const otherOf = (tenant: TenantName): TenantName => (tenant === "acme" ? "globex" : "acme");
const ATTACKERS = (["acme", "globex"] as const).flatMap((tenant) => [
  { tenant, user: TENANTS[tenant].user },
  { tenant, user: TENANTS[tenant].reader },
]);

/**
 * Strings that only the victim's data holds: its domain name (in the names,
 * labels and domain of all it owns) and its ids that are not small numbers.
 */
function markersOf(v: TenantObjects): string[] {
  return [v.tenant, v.ruleId, v.jobId, v.documentId, v.exportJobId, v.exportExecutionId];
}

/** The victim's objects as its owner reads them; anything another tenant changed shows here. */
async function snapshot(v: TenantObjects): Promise<Payload> {
  const user = TENANTS[v.tenant].user;
  const read = async (path: string): Promise<Payload> => ok(await t.call("GET", path, { user }), `${v.tenant} ${path}`);
  const files = await read(`/files${q({ thingName: v.thingName })}`);
  return {
    rule: await read(`/rules/${v.ruleId}`),
    job: await read(`/thing-jobs/jobs/${v.jobId}`),
    executions: await read(`/thing-jobs/jobs/${v.jobId}/job-executions`),
    document: await read(`/thing-jobs/documents/${v.jobId}`),
    exportJob: await read(`/observations/export/jobs/${v.exportJobId}`),
    exportExecution: await read(`/observations/export/executions/${v.exportExecutionId}`),
    // Signed URLs carry their expiry: only the files themselves are compared.
    files: (files.files as Payload[]).map(({ url: _url, ...file }) => file),
    events: await read(`/events${q({ thingName: v.thingName })}`),
    deliveries: await read("/actions/dead-letters"),
    deadLetters: await read("/observations/dead-letters"),
    thing: await read(`/admin/things/${v.thingName}`),
    thingType: await read(`/admin/thing-types/${v.thingType}`),
    group: await read(`/admin/thing-groups/${v.group}`),
    domain: await read(`/admin/domains/${v.tenant}`),
    reader: await read(`/admin/users/${TENANTS[v.tenant].reader}`),
    users: await read("/admin/users"),
    observations: await ok(await t.call("POST", "/observations/find", { user, body: findAll }), "find"),
    proxy: await ok(await t.control("/status", q({ serial: v.serial }).slice(1), user), "proxy status"),
  };
}

/** FIND's `took` is a duration, not data. */
function stable(s: Payload): Payload {
  return { ...s, observations: { ...s.observations, took: 0 } };
}

async function probeProblem(
  user: string,
  readOnly: boolean,
  probe: Probe,
  v: TenantObjects,
): Promise<string | undefined> {
  const res = await t.call(probe.method, probe.path, { user, body: probe.body });
  const text = await res.text();
  let body: Payload;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    return `answered ${res.status} with no JSON: ${text.slice(0, 200)}`;
  }
  const e = probe.expect;
  if ("check" in e) return e.check(res.status, body);
  if ("refused" in e) {
    if (res.status < 400) return `answered ${res.status}: ${text.slice(0, 300)}`;
    const shape = errorShapeProblem(res.status, body);
    if (shape) return `error body: ${shape}`;
    // A Read user is refused every write for its role before anything else is looked at.
    const keys = readOnly ? [...e.refused, "NOT_AUTHORIZED"] : e.refused;
    if (!keys.includes(body.messageKey)) return `refused with ${body.messageKey}, not ${e.refused.join(" or ")}`;
    return undefined;
  }
  if (res.status >= 500) return `answered ${res.status}: ${text.slice(0, 300)}`;
  if (res.status >= 400) return errorShapeProblem(res.status, body);
  const leaked = markersOf(v).filter((m) => text.includes(m));
  return leaked.length > 0 ? `answer holds the other tenant's ${leaked.join(", ")}: ${text.slice(0, 300)}` : undefined;
}

describe("tenant matrix: every operation across the boundary between two sibling tenants", () => {
  beforeAll(async () => {
    t = await startSecurityDms();
    doc = await openApi(t);
    for (const tenant of ["acme", "globex"] as const) objects[tenant] = await makeTenantObjects(t, tenant);
    for (const tenant of ["acme", "globex"] as const) before[tenant] = await snapshot(objects[tenant]);
  }, 180_000);
  afterAll(() => t?.close());

  it("has an entry for every operation of /openapi.json and none for an operation it lacks", () => {
    const keys = operationsOf(doc).map((o) => o.key);
    expect(
      keys.filter((k) => !(k in MATRIX)),
      "operations without a matrix entry",
    ).toEqual([]);
    expect(
      Object.keys(MATRIX).filter((k) => !keys.includes(k)),
      "entries of operations that are gone",
    ).toEqual([]);
    expect(controlRoutes(t).sort()).toEqual(Object.keys(CONTROL_MATRIX).sort());
  });

  it("refuses each tenant's administrator and Read user every operation on the other's objects, and lists nothing of it", async () => {
    const failures: string[] = [];
    for (const attacker of ATTACKERS) {
      const sides = { a: objects[attacker.tenant], v: objects[otherOf(attacker.tenant)] };
      for (const [key, entry] of Object.entries(MATRIX)) {
        if (!(typeof entry === "function")) continue;
        for (const probe of entry(sides)) {
          const readOnly = attacker.user === TENANTS[attacker.tenant].reader;
          const problem = await probeProblem(attacker.user, readOnly, probe, sides.v);
          if (problem) failures.push(`${attacker.user}: ${key} as ${probe.method} ${probe.path}: ${problem}`);
        }
      }
      for (const [key, entry] of Object.entries(CONTROL_MATRIX)) {
        for (const { query, keys } of entry(sides)) {
          const res = await t.control(key.slice(4), q(query).slice(1), attacker.user);
          const body: Payload = await res.json();
          const shape = errorShapeProblem(res.status, body, { proxy: true });
          if (res.status < 400 || shape || !keys.includes(body.messageKey)) {
            failures.push(
              `${attacker.user}: proxy ${key} ${JSON.stringify(query)}: ${res.status} ${JSON.stringify(body)}`,
            );
          }
        }
      }
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it("leaves every object of each tenant as its owner last saw it", async () => {
    for (const tenant of ["acme", "globex"] as const) {
      expect(stable(await snapshot(objects[tenant])), tenant).toEqual(stable(before[tenant]));
    }
  });

  // An item that is a JSON string encoding an observation of the other tenant's thing must be refused. Runs last, since it would change the victim if it came back.
  it("refuses an observation of the other tenant's thing sent as a JSON string item", async () => {
    const v = objects.acme;
    const item = JSON.stringify({ thingName: v.thingName, timestamp: Date.now(), state: { temp: 77 } });
    const res = await t.call("POST", "/observations", { user: TENANTS.globex.user, body: [item] });
    const body: Payload = await res.json();
    expect(body.accepted).toBe(0);
    expect(stable(await snapshot(v))).toEqual(stable(before.acme));
  });
});
