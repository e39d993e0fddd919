import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PORTAL_HOST,
  send,
  startMicDms,
  type LoginAnswer,
  type Manifest,
  type MicDms,
  type SearchAnswer,
} from "./support.js";

/**
 * Replays TelenorStartIoT/mic-workshops (API workshops 1 and 2) with
 * TelenorStartIoT/archive's `api.class.js`: the manifest from
 * `.../prod/manifest/?hostname=`, every call under `{ApiGatewayRootUrl}/prod`
 * (the stage is hard-coded) with the API key given by hand, and after login
 * the default headers `Authorization: <token>` and `identityId`.
 */
class ApiClassReplay {
  private base = "";
  private readonly defaults: Record<string, string | undefined>;
  credentials?: LoginAnswer["credentials"];

  constructor(apiKey: string) {
    this.defaults = { "x-api-key": apiKey };
  }

  async init(manifestService: string): Promise<Manifest> {
    const res = await send<Manifest>("GET", `${manifestService}/prod/manifest/?hostname=${PORTAL_HOST}`);
    this.base = `${res.json.ApiGatewayRootUrl}/prod`;
    return res.json;
  }

  async login(username: string, password: string): Promise<void> {
    const res = await this.invoke<LoginAnswer>("POST", "/auth/login", { userName: username, password });
    if (res.status !== 200) throw new Error(res.text);
    this.keep(res.json.credentials);
  }

  /** refreshCredentials without its Cognito half, which dms does not serve. */
  async refresh(): Promise<void> {
    const res = await this.invoke<LoginAnswer>("POST", "/auth/refresh", {
      refreshToken: this.credentials!.refreshToken,
    });
    if (res.status !== 200) throw new Error(res.text);
    this.keep(res.json.credentials);
  }

  private keep(credentials: LoginAnswer["credentials"]): void {
    this.credentials = credentials;
    // axios defaults.headers.common: a missing identityId is undefined here, and node:http refuses it.
    this.defaults.Authorization = credentials.token;
    this.defaults.identityId = credentials.identityId;
  }

  invoke<T = Record<string, unknown>>(method: string, url: string, data?: unknown) {
    return send<T>(method, this.base + url, this.defaults, data);
  }
}

let t: MicDms;
let api: ApiClassReplay;

beforeAll(async () => {
  t = await startMicDms(undefined, { DMS_ROLES: "api,engine" });
  // Workshop 1 has the user copy the key from the metadata manifest.
  const metadata = await send<{ ApiKey: string }>("GET", `${t.url}/prod/metadata/manifest`);
  api = new ApiClassReplay(metadata.json.ApiKey);
  await api.init(t.url);
  await api.login("alice", "alice-pw");
  // Observations for workshop 2's "observe a thing".
  const now = Date.now();
  const res = await t.call("POST", "/observations", {
    user: "admin",
    body: [
      { thingName: "t1", timestamp: now - 2000, state: { temp: 21 } },
      { thingName: "t1", timestamp: now - 1000, state: { temp: 22 } },
    ],
  });
  expect(res.status).toBe(200);
}, 60_000);
afterAll(async () => t?.close());

describe("API workshop 1: create an API client", () => {
  it("login answers credentials with identityId, token and refreshToken", () => {
    expect(Object.keys(api.credentials!)).toEqual(["identityId", "token", "refreshToken", "expiresIn"]);
  });

  it("GET /users/{userName} with Authorization and identityId", async () => {
    const res = await api.invoke("GET", "/users/alice");
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ userName: "alice", domainName: "acme" });
  });
});

describe("API workshop 2: use the API", () => {
  it("GET /thingtypes lists the thing types, GET /thingtypes/{id} one of them", async () => {
    const list = await api.invoke<{ id: string; label: string }[]>("GET", "/thingtypes");
    expect(list.json.map((x) => x.id)).toEqual(["10", "20"]);
    const one = await api.invoke("GET", "/thingtypes/10");
    expect(one.json).toMatchObject({ id: "10", label: "Tracker", resources: expect.any(Array) });
  });

  it("POST /things/find with an ES query on thingType answers hits.hits", async () => {
    const res = await api.invoke<SearchAnswer>("POST", "/things/find", {
      query: { size: 1000, query: { bool: { filter: { term: { thingType: "10" } } } } },
      type: "thing,sub_thing",
    });
    expect(res.status).toBe(200);
    expect(res.json.hits.total).toBe(2);
    expect(res.json.hits.hits.map((h) => h._source.thingName).sort()).toEqual(["t1", "t2"]);
  });

  it("POST /observations/find with a timestamp range and a thingName term answers hits", async () => {
    const res = await api.invoke<SearchAnswer>("POST", "/observations/find", {
      query: {
        size: 10,
        query: {
          bool: { filter: [{ range: { timestamp: { gte: 0, lte: Date.now() } } }, { term: { thingName: "t1" } }] },
        },
      },
    });
    expect(res.status).toBe(200);
    expect(res.json.hits.total).toBe(2);
  });

  it("after a refresh, calls go on with the new token and the same identityId", async () => {
    const before = api.credentials!;
    await api.refresh();
    expect(api.credentials!.identityId).toBe(before.identityId);
    expect(api.credentials!.token).not.toBe(before.token);
    expect((await api.invoke("GET", "/thingtypes")).status).toBe(200);
  });

  it("things and thing types answer only within the caller's domains", async () => {
    const found = await api.invoke<SearchAnswer>("POST", "/things/find", { query: { size: 100 } });
    expect(found.json.hits.hits.map((h) => h._source.thingName).sort()).toEqual(["e1", "t1", "t2"]);
    const eastie = await send<LoginAnswer>(
      "POST",
      `${t.url}/prod/auth/login`,
      { "x-api-key": "test-api-key-0001" },
      { userName: "eastie", password: "eastie-pw" },
    );
    const headers = {
      "x-api-key": "test-api-key-0001",
      Authorization: eastie.json.credentials.token,
      identityId: eastie.json.credentials.identityId,
    };
    const own = await send<SearchAnswer>("POST", `${t.url}/prod/things/find`, headers, { query: {} });
    expect(own.json.hits.hits.map((h) => h._source.thingName)).toEqual(["e1"]);
    expect((await send("GET", `${t.url}/prod/things/t1`, headers)).status).toBe(403);
    expect((await send("GET", `${t.url}/prod/thingtypes/10`, headers)).status).toBe(404);
  });
});
