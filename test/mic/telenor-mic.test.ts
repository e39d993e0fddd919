import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PORTAL_HOST,
  PUBLIC_KEY,
  STACK,
  send,
  startMicDms,
  type Answer,
  type LoginAnswer,
  type Manifest,
  type MicDms,
} from "./support.js";

/**
 * Replays thnetii/telenor-mic (C#): `MicClient` resolves every operation
 * relative to `new Uri(ApiGatewayRootUri, StackName + "/")`, refuses an answer
 * that is not 2xx, not JSON, not an object, or carries `errorMessage`; after
 * login it sends `identityId`, `Authorization: Bearer <token>` and x-api-key
 * (`MicRestHttpHandler` sends the raw token instead). Then the request
 * sequence of its `http/mic.http`.
 */
function micClientAccepts(res: Answer<unknown>): void {
  expect(res.status, res.text).toBeGreaterThanOrEqual(200);
  expect(res.status, res.text).toBeLessThan(300);
  expect(res.contentType).toMatch(/^application\/json/);
  expect(res.json).toBeTypeOf("object");
  expect(Array.isArray(res.json)).toBe(false);
  expect(res.json).not.toHaveProperty("errorMessage");
}

let t: MicDms;
let manifest: Manifest;
let base: URL;
let apiKey: string;
let login: LoginAnswer;

const at = (relative: string): string => new URL(relative, base).toString();
const bearer = (): Record<string, string> => ({
  identityId: login.credentials.identityId,
  Authorization: `Bearer ${login.credentials.token}`,
  "x-api-key": apiKey,
});

beforeAll(async () => {
  t = await startMicDms();
  // mic.http: @manifestUrl = .../prod/manifest/ then ?hostname=
  const m = await send<Manifest>("GET", `${t.url}/prod/manifest/?hostname=${PORTAL_HOST}`);
  micClientAccepts(m);
  manifest = m.json;
  base = new URL(`${manifest.StackName}/`, manifest.ApiGatewayRootUrl);
}, 60_000);
afterAll(async () => t?.close());

describe("MicClient.CreateFromHostname", () => {
  it("builds its endpoint from ApiGatewayRootUrl and StackName, and the manifest has what its constructor reads", () => {
    expect(base.toString()).toBe(`http://127.0.0.1:${t.port}/${STACK}/`);
    // Region, IdentityPool and UserPool feed the AWS SDK objects MicClient builds when it starts.
    expect(m(manifest)).toMatchObject({ Region: expect.any(String), IdentityPool: expect.any(String) });
  });

  it("GET metadata/manifest without credentials gives the ApiKey", async () => {
    const res = await send<{ ApiKey: string; UserPool: string }>("GET", at("metadata/manifest"));
    micClientAccepts(res);
    apiKey = res.json.ApiKey;
    expect(apiKey).toBe(PUBLIC_KEY);
  });

  it("POST auth/login (charset=utf-8) gives credentials with identityId, user and permissions.objects", async () => {
    const res = await send<LoginAnswer>(
      "POST",
      at("auth/login"),
      { "x-api-key": apiKey, "Content-Type": "application/json;charset=utf-8" },
      { userName: "alice", password: "alice-pw" },
    );
    micClientAccepts(res);
    login = res.json;
    expect(Object.keys(login.credentials)[0]).toBe("identityId");
    expect(login.credentials.token).toBeTruthy();
    expect(login.credentials.refreshToken).toBeTruthy();
    expect(login.user).toMatchObject({ userName: "alice", roleName: "ReadWrite", domainName: "acme" });
    expect(login.permissions.objects.Things).toContain("CREATE");
  });

  it("a wrong password is an error object with messageKey INVALID_LOGIN", async () => {
    const res = await send("POST", at("auth/login"), { "x-api-key": apiKey }, { userName: "alice", password: "no" });
    expect(res.status).toBe(401);
    expect(res.json).toMatchObject({ messageKey: "INVALID_LOGIN" });
  });
});

describe("the calls of mic.http, with MicClient's and MicRestHttpHandler's headers", () => {
  it("AuthRefresh with valid JSON gives new credentials with the same identityId", async () => {
    const res = await send<LoginAnswer>(
      "POST",
      at("auth/refresh"),
      { "x-api-key": apiKey },
      { refreshToken: login.credentials.refreshToken },
    );
    micClientAccepts(res);
    expect(res.json.credentials.identityId).toBe(login.credentials.identityId);
    login = res.json;
  });

  it("AuthRefresh exactly as mic.http writes it (a trailing comma: not JSON) is INVALID_ARGUMENTS, not a 500", async () => {
    const body = `{\n    "refreshToken": "${login.credentials.refreshToken}",\n}`;
    const res = await send("POST", at("auth/refresh"), { "x-api-key": apiKey }, body);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ messageKey: "INVALID_ARGUMENTS" });
  });

  it("UserGetWhoami: GET user?attributes=...", async () => {
    const res = await send(
      "GET",
      at("user?attributes=userName,firstName,lastName,email,roleName,domainName"),
      bearer(),
    );
    micClientAccepts(res);
    expect(res.json).toMatchObject({ userName: "alice", domainName: "acme" });
  });

  it("UserGetAuthUser: GET users/{user.userName}?attributes=...", async () => {
    const res = await send("GET", at(`users/${login.user.userName}?attributes=firstName,lastName,email`), bearer());
    micClientAccepts(res);
    expect(res.json).toMatchObject({ userName: "alice", roleName: "ReadWrite" });
  });

  it("UserCreate: POST users answers 200 with the user", async () => {
    const res = await send("POST", at("users"), bearer(), {
      userName: "csharp-made",
      firstName: "C",
      lastName: "Sharp",
      email: "c@example.com",
      roleName: "Read",
      domainName: "east",
    });
    micClientAccepts(res);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ userName: "csharp-made", roleName: "Read", domainName: "east" });
  });

  it("FileV2List: GET files?listAll=true", async () => {
    const res = await send("GET", at("files?listAll=true"), bearer());
    micClientAccepts(res);
    expect(res.json).toMatchObject({ isTruncated: false, files: [] });
  });

  it("ThingTypeList answers an array ($[0].id), ThingTypeGet the first of it", async () => {
    const list = await send<{ id: string }[]>("GET", at("thingtypes"), bearer());
    expect(list.status).toBe(200);
    expect(Array.isArray(list.json)).toBe(true);
    const first = list.json[0]!.id;
    const one = await send("GET", at(`thingtypes/${first}`), bearer());
    micClientAccepts(one);
    expect(one.json).toMatchObject({ id: first, label: "Tracker" });
  });

  it("MicRestHttpHandler's raw token in Authorization is accepted too", async () => {
    const res = await send("GET", at("user"), { ...bearer(), Authorization: login.credentials.token });
    micClientAccepts(res);
  });
});

function m(x: Manifest): Record<string, unknown> {
  return x as unknown as Record<string, unknown>;
}
