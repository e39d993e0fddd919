import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkStages } from "../../src/api/stages.js";
import { API_KEY } from "../support/dms.js";
import { HOT_RULE, PUBLIC_KEY, STACK, send, startMicDms, type LoginAnswer, type MicDms } from "./support.js";

/**
 * What every MIC client relies on, checked over the whole API rather than per
 * client: each route of /openapi.json answers the same under /, /{StackName}/
 * and /prod/; every operation's success is 200; the manifests need no
 * credentials; identityId is stable per user.
 */
interface OpenApi {
  paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[] }>>;
}

let t: MicDms;
let doc: OpenApi;

beforeAll(async () => {
  t = await startMicDms();
  doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as OpenApi;
}, 60_000);
afterAll(async () => t?.close());

describe("every REST route under /{stage}/", () => {
  it("answers each operation of /openapi.json alike at /, /demo/ and /prod/ (never 'No operation')", async () => {
    const token = await t.token("alice");
    const headers = { "x-api-key": API_KEY, authorization: token };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      // Placeholders get a value that exists nowhere: the answer is then the same NOT_FOUND everywhere.
      const concrete = path.replace(/\{[^}]+\}/g, "no-such-1");
      for (const method of Object.keys(operations)) {
        // Reads only: a write under one prefix would change what the next prefix sees.
        if (method !== "get") continue;
        const answers = [];
        for (const prefix of ["", `/${STACK}`, "/prod"]) {
          const res = await send("GET", `${t.url}${prefix}${concrete}`, headers);
          answers.push({ status: res.status, key: (res.json as { messageKey?: string } | undefined)?.messageKey });
        }
        expect(answers[0]!.key, `${method} ${path}`).not.toBe("NOT_FOUND");
        expect(answers[1], `${method} ${path} under /${STACK}`).toEqual(answers[0]);
        expect(answers[2], `${method} ${path} under /prod`).toEqual(answers[0]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it("takes writes under a stage too: POST /demo/rules and /prod/rules each create one rule", async () => {
    const token = await t.token("alice");
    const headers = { "x-api-key": API_KEY, authorization: token };
    const rule = { ...HOT_RULE, name: "staged" };
    for (const prefix of [`/${STACK}`, "/prod"]) {
      expect((await send("POST", `${t.url}${prefix}/rules`, headers, rule)).status).toBe(200);
    }
    const all = await send<{ name: string }[]>("GET", `${t.url}/rules`, headers);
    expect(all.json.filter((r) => r.name === "staged")).toHaveLength(2);
  });

  it("a stack named like a route's first segment is refused at start", () => {
    expect(() => checkStages(["rules", "prod"], ["/rules/{id}", "/files"])).toThrow(/DMS_STACK_NAME/);
    expect(() => checkStages(["demo", "prod"], ["/rules/{id}", "/files"])).not.toThrow();
  });
});

describe("every operation answers 200 on success, creates included", () => {
  it("no operation of /openapi.json declares a 201", () => {
    const creates: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        expect(Object.keys(op.responses), `${method} ${path}`).not.toContain("201");
        if (method === "post") creates.push(path);
      }
    }
    expect(creates).toEqual(expect.arrayContaining(["/rules", "/users", "/things", "/admin/users", "/admin/things"]));
  });
});

describe("browser clients", () => {
  it("a preflight for login and for a call with identityId is answered without credentials", async () => {
    for (const path of [`/${STACK}/auth/login`, "/prod/things/find"]) {
      const res = await fetch(`${t.url}${path}`, {
        method: "OPTIONS",
        headers: {
          origin: "http://portal.example.com",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization,identityid,x-api-key,content-type",
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("identityid");
    }
  });
});

describe("the manifests", () => {
  it("GET /manifest/?hostname= and GET /{stage}/metadata/manifest need no credentials", async () => {
    const manifest = await send("GET", `${t.url}/manifest/?hostname=any.example.com`);
    expect(manifest.status).toBe(200);
    expect(manifest.json).toMatchObject({ ApiGatewayRootUrl: `http://127.0.0.1:${t.port}`, StackName: STACK });
    for (const stage of [STACK, "prod"]) {
      const metadata = await send("GET", `${t.url}/${stage}/metadata/manifest`);
      expect(metadata.json).toMatchObject({ ApiKey: PUBLIC_KEY });
    }
  });

  it("the public client key is an API key like the others", async () => {
    const res = await send(
      "POST",
      `${t.url}/auth/login`,
      { "x-api-key": PUBLIC_KEY },
      {
        userName: "alice",
        password: "alice-pw",
      },
    );
    expect(res.status).toBe(200);
  });

  it("bad input to the manifest is INVALID_ARGUMENTS, not a 500", async () => {
    const res = await send("GET", `${t.url}/manifest?hostname=${"h".repeat(300)}`);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "hostname" });
  });
});

describe("credentials.identityId", () => {
  const login = (userName: string, password: string) =>
    send<LoginAnswer>("POST", `${t.url}/auth/login`, { "x-api-key": API_KEY }, { userName, password });

  it("is the first key of credentials, the same at every login and refresh, and differs between users", async () => {
    const a1 = (await login("alice", "alice-pw")).json;
    const a2 = (await login("alice", "alice-pw")).json;
    const refreshed = await send<LoginAnswer>(
      "POST",
      `${t.url}/auth/refresh`,
      { "x-api-key": API_KEY },
      { refreshToken: a1.credentials.refreshToken },
    );
    const e = (await login("eastie", "eastie-pw")).json;
    expect(Object.keys(a1.credentials)[0]).toBe("identityId");
    expect(Object.keys(refreshed.json.credentials)[0]).toBe("identityId");
    expect(a2.credentials.identityId).toBe(a1.credentials.identityId);
    expect(refreshed.json.credentials.identityId).toBe(a1.credentials.identityId);
    expect(e.credentials.identityId).not.toBe(a1.credentials.identityId);
  });

  it("permissions.objects of a Read user holds READ only", async () => {
    const reader = (await login("reader", "reader-pw")).json;
    for (const actions of Object.values(reader.permissions.objects)) expect(actions).toEqual(["READ"]);
    expect(Object.keys(reader.permissions.objects)).toContain("Rules");
  });
});

describe("users, thing types and things: domain privileges as everywhere else", () => {
  const as = async (user: string) => ({ "x-api-key": API_KEY, authorization: await t.token(user) });

  it("GET /users/{userName}: oneself always; another user only with Users.READ on its domains", async () => {
    expect((await send("GET", `${t.url}/users/eastie`, await as("eastie"))).status).toBe(200);
    const other = await send("GET", `${t.url}/users/alice`, await as("eastie"));
    expect(other.status).toBe(403);
    expect(other.json).toMatchObject({ messageKey: "NOT_AUTHORIZED" });
    expect((await send("GET", `${t.url}/users/eastie`, await as("alice"))).status).toBe(200);
    const missing = await send("GET", `${t.url}/users/nobody`, await as("alice"));
    expect(missing.json).toMatchObject({ messageKey: "USER_NOT_FOUND", property: "userName" });
  });

  it("POST /users: needs Users.CREATE there, grants nothing the caller lacks, refuses a Read caller", async () => {
    const made = await send<{ privileges: Record<string, string[]> }>("POST", `${t.url}/users`, await as("eastie"), {
      userName: "east-reader",
      roleName: "Read",
      domainName: "east",
    });
    expect(made.status).toBe(200);
    // A Read user made by eastie (*.* on east) gets the reading half of it, on east only.
    expect(Object.keys(made.json.privileges)).toEqual(["east"]);
    expect(made.json.privileges.east!.every((p) => p.endsWith(".READ"))).toBe(true);
    const outside = await send("POST", `${t.url}/users`, await as("eastie"), {
      userName: "acme-user",
      roleName: "Read",
      domainName: "acme",
    });
    expect(outside.json).toMatchObject({ messageKey: "NOT_AUTHORIZED" });
    const escalate = await send("POST", `${t.url}/users`, await as("eastie"), {
      userName: "east-admin",
      roleName: "ReadWrite",
      domainName: "east",
      privileges: { root: ["*.*"] },
    });
    expect(escalate.json).toMatchObject({ messageKey: "NOT_AUTHORIZED" });
    const reader = await send("POST", `${t.url}/users`, await as("reader"), {
      userName: "by-reader",
      roleName: "Read",
      domainName: "acme",
    });
    expect(reader.status).toBe(403);
    const noDomain = await send("POST", `${t.url}/users`, await as("alice"), { userName: "x1", roleName: "Read" });
    expect(noDomain.json).toMatchObject({ messageKey: "PROPERTY_REQUIRED", property: "domainName" });
  });

  it("a user made without a password cannot log in with any guess", async () => {
    const res = await send(
      "POST",
      `${t.url}/auth/login`,
      { "x-api-key": API_KEY },
      {
        userName: "east-reader",
        password: "",
      },
    );
    expect(res.status).toBe(400);
    const guess = await send(
      "POST",
      `${t.url}/auth/login`,
      { "x-api-key": API_KEY },
      {
        userName: "east-reader",
        password: "undefined",
      },
    );
    expect(guess.json).toMatchObject({ messageKey: "INVALID_LOGIN" });
  });

  it("POST /things: Things.CREATE on the domain, a readable type, and mqtt as the only protocol", async () => {
    const body = { thingName: "p1", thingType: "10", domain: "acme" };
    const other = await send("POST", `${t.url}/things`, await as("eastie"), body);
    expect(other.json).toMatchObject({ messageKey: "NOT_AUTHORIZED" });
    const lwm2m = await send("POST", `${t.url}/things`, await as("alice"), { ...body, protocol: "lwm2m" });
    expect(lwm2m.json).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "protocol" });
    const hidden = await send("POST", `${t.url}/things`, await as("eastie"), { ...body, domain: "east" });
    expect(hidden.json).toMatchObject({ messageKey: "THING_TYPE_NOT_FOUND" });
    expect((await send("POST", `${t.url}/things`, await as("alice"), body)).status).toBe(200);
    const again = await send("POST", `${t.url}/things`, await as("alice"), body);
    expect(again.status).toBe(409);
  });

  it("POST /things/find: a bad query is INVALID_ARGUMENTS naming it, a missing one PROPERTY_REQUIRED", async () => {
    const bad = await send("POST", `${t.url}/things/find`, await as("alice"), { query: { query: { nope: {} } } });
    expect(bad.json).toMatchObject({ messageKey: "INVALID_ARGUMENTS" });
    const missing = await send("POST", `${t.url}/things/find`, await as("alice"), { type: "thing" });
    expect(missing.json).toMatchObject({ messageKey: "PROPERTY_REQUIRED", property: "query" });
  });
});
