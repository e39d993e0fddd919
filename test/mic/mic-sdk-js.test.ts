import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HOT_RULE,
  PORTAL_HOST,
  PUBLIC_KEY,
  STACK,
  send,
  startMicDms,
  type LoginAnswer,
  type Manifest,
  type MicDms,
  type SearchAnswer,
} from "./support.js";

/**
 * Replays Pwntus/mic-sdk-js (REST 4.x) as it talks to a stack: the manifest
 * under a `/prod` root with `?hostname=`, the metadata manifest under
 * `{ApiGatewayRootUrl}/{StackName}`, login with x-api-key, then every call with
 * x-api-key, `Authorization: <token>` and `identityId`, where any status but
 * 200 counts as expired credentials: refresh, then the same request once more.
 */
class SdkReplay {
  manifest!: Manifest;
  apiKey!: string;
  credentials?: LoginAnswer["credentials"];
  user?: LoginAnswer["user"];
  permissions?: LoginAnswer["permissions"];
  /** Every request the replay sent, to count repeats. */
  readonly sent: { method: string; url: string; status: number }[] = [];
  refreshes = 0;

  async init(manifestRoot: string, userName: string, password: string): Promise<void> {
    const manifest = await send<Manifest>("GET", `${manifestRoot}/manifest?hostname=${PORTAL_HOST}`);
    this.manifest = manifest.json;
    // The SDK throws on a missing ApiGatewayRootUrl or an empty StackName.
    if (!this.manifest.ApiGatewayRootUrl) throw new Error("Missing ApiGatewayRootUrl");
    if (!this.manifest.StackName) throw new Error("Missing StackName");
    const metadata = await send<{ ApiKey?: string }>("GET", `${this.endpoint()}/metadata/manifest`);
    if (!metadata.json.ApiKey) throw new Error("Missing ApiKey");
    this.apiKey = metadata.json.ApiKey;
    const login = await send<LoginAnswer>("POST", `${this.endpoint()}/auth/login`, this.headers(), {
      password,
      userName,
    });
    if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
    this.take(login.json);
  }

  endpoint(): string {
    return `${this.manifest.ApiGatewayRootUrl}/${this.manifest.StackName}`;
  }

  headers(): Record<string, string | undefined> {
    const auth = this.credentials
      ? { identityId: this.credentials.identityId, Authorization: this.credentials.token }
      : {};
    return { "x-api-key": this.apiKey, ...auth };
  }

  take(answer: LoginAnswer): void {
    this.user = answer.user;
    this.credentials = answer.credentials;
    this.permissions = answer.permissions;
  }

  async refresh(): Promise<void> {
    this.refreshes++;
    const res = await send<LoginAnswer>(
      "POST",
      `${this.endpoint()}/auth/refresh`,
      { "x-api-key": this.apiKey },
      { refreshToken: this.credentials!.refreshToken },
    );
    if (res.status !== 200) throw new Error(`refresh: ${res.status} ${res.text}`);
    this.take(res.json);
  }

  private async tryCall<T>(method: string, url: string, body?: unknown): Promise<T> {
    let res = await send<T>(method, url, this.headers(), body);
    this.sent.push({ method, url, status: res.status });
    if (res.status !== 200) {
      await this.refresh();
      res = await send<T>(method, url, this.headers(), body);
      this.sent.push({ method, url, status: res.status });
      if (res.status !== 200) throw new Error(res.text);
    }
    return res.json;
  }

  post<T>(endpoint: string, body: object = {}): Promise<T> {
    return this.tryCall<T>("POST", this.endpoint() + endpoint, body);
  }

  get<T>(endpoint: string, params: Record<string, string> = {}): Promise<T> {
    const query = new URLSearchParams(params).toString();
    return this.tryCall<T>("GET", this.endpoint() + endpoint + (query ? `?${query}` : ""));
  }
}

let t: MicDms;
let sdk: SdkReplay;

beforeAll(async () => {
  t = await startMicDms();
  sdk = new SdkReplay();
  // ROOT_STACK of the SDK is the manifest service's own /prod stage.
  await sdk.init(`${t.url}/prod`, "alice", "alice-pw");
}, 60_000);
afterAll(async () => t?.close());

describe("mic-sdk-js: init", () => {
  it("reads ApiGatewayRootUrl and a non-empty StackName from the manifest, then the public ApiKey", () => {
    expect(sdk.manifest.ApiGatewayRootUrl).toBe(`http://127.0.0.1:${t.port}`);
    expect(sdk.manifest.StackName).toBe(STACK);
    expect(sdk.apiKey).toBe(PUBLIC_KEY);
  });

  it("keeps user, credentials with an identityId, and permissions from login", () => {
    expect(sdk.user).toMatchObject({ userName: "alice", roleName: "ReadWrite", domainName: "acme" });
    expect(sdk.credentials!.identityId).toMatch(new RegExp(`^${STACK}:[0-9a-f-]{36}$`));
    expect(sdk.permissions!.objects.Rules).toEqual(["CREATE", "READ", "UPDATE", "DELETE"]);
  });
});

describe("mic-sdk-js: calls, where any status but 200 means refresh and repeat", () => {
  it("POST /rules answers 200 on the first try: one rule, no refresh, no repeat", async () => {
    const before = sdk.sent.length;
    const rule = await sdk.post<{ id: string; name: string }>("/rules", { ...HOT_RULE, name: "sdk-once" });
    expect(rule.name).toBe("sdk-once");
    expect(sdk.sent.slice(before)).toEqual([{ method: "POST", url: `${sdk.endpoint()}/rules`, status: 200 }]);
    expect(sdk.refreshes).toBe(0);
    const rules = await sdk.get<{ name: string }[]>("/rules");
    expect(rules.filter((r) => r.name === "sdk-once")).toHaveLength(1);
    expect(await sdk.get<{ id: string }>(`/rules/${rule.id}`)).toMatchObject({ id: rule.id });
  });

  it("every POST it makes answers 200 the first time", async () => {
    const now = Date.now();
    await sdk.post<SearchAnswer>("/things/find", { query: { size: 10 }, type: "thing" });
    await sdk.post<SearchAnswer>("/observations/find", {
      query: { size: 0, query: { range: { timestamp: { gte: now - 60_000 } } } },
    });
    await sdk.post("/search", { term: "te" });
    await sdk.post("/users", { userName: "sdk-made", roleName: "Read", domainName: "acme", email: "m@example.com" });
    await sdk.post("/things", { thingName: "sdk-thing", thingType: "10", domain: "acme", protocol: "mqtt" });
    expect(sdk.sent.filter((s) => s.status !== 200)).toEqual([]);
    expect(sdk.refreshes).toBe(0);
  });

  it("GETs thing types, a thing, a user and files with the same headers", async () => {
    const types = await sdk.get<{ id: string }[]>("/thingtypes");
    expect(types.map((x) => x.id)).toEqual(["10", "20"]);
    expect(await sdk.get("/things/sdk-thing")).toMatchObject({ thingName: "sdk-thing", thingType: "10" });
    expect(await sdk.get("/users/alice")).toMatchObject({ userName: "alice", roleName: "ReadWrite" });
    expect(await sdk.get("/files", { listAll: "true" })).toMatchObject({ files: [] });
    expect(await sdk.get("/thing-jobs/jobs")).toBeDefined();
  });

  it("an expired token is refreshed once and the call repeated; identityId stays the same", async () => {
    const identityId = sdk.credentials!.identityId;
    sdk.credentials = { ...sdk.credentials!, token: "expired.token.value" };
    const before = sdk.sent.length;
    await sdk.get("/rules");
    expect(sdk.sent.slice(before).map((s) => s.status)).toEqual([401, 200]);
    expect(sdk.refreshes).toBe(1);
    expect(sdk.credentials!.identityId).toBe(identityId);
  });
});
