import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tokens } from "../../src/auth/index.js";
import { API_KEY, startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms();
});
afterAll(() => t.close());

const login = (body: unknown, key: string | null = API_KEY) =>
  fetch(`${t.url}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) },
    body: JSON.stringify(body),
  });

describe("POST /auth/login", () => {
  it("answers user, credentials and permissions for a good password", async () => {
    const res = await login({ userName: "alice", password: "alice-pw" });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.user).toEqual({
      userName: "alice",
      roleName: "ReadWrite",
      domainName: "acme",
      domainPath: "root/acme",
    });
    expect(body.credentials.expiresIn).toBe(3600);
    expect(body.credentials.token.split(".")).toHaveLength(3);
    expect(body.permissions.domains.acme).toContain("Rules.*");
  });

  it("refuses a bad password with 401 INVALID_LOGIN", async () => {
    const res = await login({ userName: "alice", password: "nope" });
    expect(res.status).toBe(401);
    expect((await json(res)).messageKey).toBe("INVALID_LOGIN");
  });

  it("answers PROPERTY_REQUIRED naming a missing field", async () => {
    const res = await login({ userName: "alice" });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      message: "Property password is required",
      messageKey: "PROPERTY_REQUIRED",
      property: "password",
    });
  });

  it("answers INVALID_ARGUMENTS for a wrong type and for a body that is not JSON", async () => {
    const res = await login({ userName: "alice", password: 42 });
    expect(res.status).toBe(400);
    expect((await json(res)).messageKey).toBe("INVALID_ARGUMENTS");
    const raw = await fetch(`${t.url}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": API_KEY },
      body: "{not json",
    });
    expect(raw.status).toBe(400);
    expect((await json(raw)).messageKey).toBe("INVALID_ARGUMENTS");
  });

  it("needs the API key: 403 Forbidden when missing or bad", async () => {
    for (const key of [null, "wrong-key"]) {
      const res = await login({ userName: "alice", password: "alice-pw" }, key);
      expect(res.status).toBe(403);
      expect(await json(res)).toEqual({ message: "Forbidden" });
    }
  });
});

describe("tokens", () => {
  it("a refresh token yields new credentials; an access token is not a refresh token", async () => {
    const body = await json(await login({ userName: "alice", password: "alice-pw" }));
    const ok = await t.call("POST", "/auth/refresh", { body: { refreshToken: body.credentials.refreshToken } });
    expect(ok.status).toBe(200);
    const bad = await t.call("POST", "/auth/refresh", { body: { refreshToken: body.credentials.token } });
    expect(bad.status).toBe(401);
  });

  it("an expired token answers 401", async () => {
    const past = new Tokens("test-secret-test-secret-test-secret", () => Date.now() - 2 * 3600_000);
    const { token } = await past.issue("alice");
    const res = await t.call("GET", "/admin/domains", { headers: { authorization: token } });
    expect(res.status).toBe(401);
  });

  it("a tampered token answers 401, a missing one too", async () => {
    const token = await t.token("alice");
    const [h, p, s] = token.split(".");
    const payload = JSON.parse(Buffer.from(p!, "base64url").toString());
    payload.sub = "admin";
    const forged = `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${s}`;
    expect((await t.call("GET", "/admin/domains", { headers: { authorization: forged } })).status).toBe(401);
    expect((await t.call("GET", "/admin/domains")).status).toBe(401);
  });

  it("accepts the token with and without Bearer", async () => {
    const token = await t.token("alice");
    for (const authorization of [token, `Bearer ${token}`]) {
      expect((await t.call("GET", "/admin/domains", { headers: { authorization } })).status).toBe(200);
    }
  });
});

describe("service endpoints", () => {
  it("serves /healthz, /metrics, /openapi.json and /docs without credentials", async () => {
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toContain("dms_http_requests_total");
    const doc = await json(await fetch(`${t.url}/openapi.json`));
    expect(doc.openapi).toBe("3.0.3");
    expect(Object.keys(doc.paths)).toContain("/auth/login");
    expect(await (await fetch(`${t.url}/docs`)).text()).toContain("swagger-ui-bundle.js");
    expect((await fetch(`${t.url}/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);
  });

  it("answers 413 for a body over the limit", async () => {
    const res = await login({ userName: "alice", password: "x".repeat(5 * 1024 * 1024) });
    expect(res.status).toBe(413);
  });
});

// A refresh token is used up by its exchange, so a stolen one cannot be exchanged again and again.
describe("refresh tokens rotate", () => {
  const refresh = (dms: TestDms, refreshToken: string) => dms.call("POST", "/auth/refresh", { body: { refreshToken } });
  const loginAt = async (dms: TestDms): Promise<string> => {
    const res = await fetch(`${dms.url}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": API_KEY },
      body: JSON.stringify({ userName: "alice", password: "alice-pw" }),
    });
    return (await json(res)).credentials.refreshToken;
  };

  it("each exchange answers a new refresh token; reusing an old one is refused and revokes its family", async () => {
    const first = await loginAt(t);
    const other = await loginAt(t); // another login: another family
    const one = await refresh(t, first);
    expect(one.status).toBe(200);
    const second = (await json(one)).credentials.refreshToken;
    expect(second).not.toBe(first);
    const two = await refresh(t, second);
    expect(two.status).toBe(200);
    const third = (await json(two)).credentials.refreshToken;

    // `first` again: refused with the interface's key for a bad token...
    const reused = await refresh(t, first);
    expect(reused.status).toBe(401);
    expect((await json(reused)).messageKey).toBe("UNAUTHORIZED");
    // ...and the family is gone: its newest token no longer works either.
    expect((await refresh(t, third)).status).toBe(401);
    // A token of another login is untouched.
    expect((await refresh(t, other)).status).toBe(200);
  });

  it("holds across processes sharing the data dir and across a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dms-refresh-"));
    try {
      const a = await startTestDms({ dataDir });
      const b = await startTestDms({ dataDir });
      let afterRestart: string;
      let usedBefore: string;
      try {
        const token = await loginAt(a);
        // Exchanged at b, then presented again at a: a sees b's use.
        const atB = await refresh(b, token);
        expect(atB.status).toBe(200);
        const next = (await json(atB)).credentials.refreshToken;
        expect((await refresh(a, token)).status).toBe(401);
        expect((await refresh(b, next)).status).toBe(401); // family revoked for both
        afterRestart = await loginAt(a);
        usedBefore = await loginAt(b);
        expect((await refresh(a, usedBefore)).status).toBe(200);
      } finally {
        await a.close();
        await b.close();
      }
      const c = await startTestDms({ dataDir });
      try {
        // Issued before the restart, unused: good once, then used up.
        expect((await refresh(c, afterRestart)).status).toBe(200);
        expect((await refresh(c, afterRestart)).status).toBe(401);
        // Used before the restart: still refused after it.
        expect((await refresh(c, usedBefore)).status).toBe(401);
      } finally {
        await c.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000); // three whole services start on a shared, loaded machine
});
