import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuth, type Auth, type Principal } from "../../src/auth/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";
import { API_KEY } from "../support/provision.js";

/** The identity capability made from its parts on SQLite (no service, no HTTP): its access rules and its store. */

let parts: Parts;
let auth: Auth;
let now = Date.now();
const as = (userName: string): Principal => auth.identity.principal(userName)!;

beforeAll(async () => {
  parts = await openParts();
  auth = await createAuth({
    store: parts.stores.identity,
    bus: parts.bus,
    clock: () => now,
    tokenSecret: "unit-secret-unit-secret-unit-secret",
  });
});
afterAll(() => parts.close());

describe("identity: users, in the service", () => {
  it("CREATE needs ReadWrite and Users.CREATE on every domain the user lives in, and grants only what the caller holds", async () => {
    const user = { userName: "u1", password: "u1-password", role: "Read" as const, homeDomain: "east" };
    expect(await refusal(() => auth.users.create(as("reader"), user))).toBe("NOT_AUTHORIZED");
    // eastie holds *.* on east only: a grant on acme is not its to give.
    expect(
      await refusal(() => auth.users.create(as("eastie"), { ...user, privileges: { acme: ["Things.READ"] } })),
    ).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => auth.users.create(as("eastie"), { ...user, homeDomain: "nowhere" }))).toBe(
      "DOMAIN_NOT_FOUND",
    );
    const made = await auth.users.create(as("eastie"), { ...user, privileges: { east: ["Things.READ"] } });
    expect(made).toMatchObject({ userName: "u1", homeDomain: "east", privileges: { east: ["Things.READ"] } });
    expect(await auth.identity.authenticate("u1", "u1-password")).toMatchObject({ userName: "u1" });
    expect(await refusal(() => auth.users.create(as("eastie"), user))).toBe("ALREADY_EXISTS");
  });

  it("a MIC user made without privileges inherits the caller's on its domain, reading ones only for a Read user", async () => {
    const made = await auth.users.createForMic(as("eastie"), { userName: "u2", role: "Read", homeDomain: "east" });
    expect(Object.keys(made.privileges)).toEqual(["east"]);
    expect(made.privileges.east!.every((p) => p.endsWith(".READ"))).toBe(true);
    expect(made.privileges.east).toContain("Things.READ");
    // A user reads itself without any privilege; others need Users.READ where the user lives.
    expect(auth.users.getForMic(as("u2"), "u2").userName).toBe("u2");
    expect(await refusal(() => auth.users.getForMic(as("u2"), "alice"))).toBe("NOT_AUTHORIZED");
  });

  it("lists only users the caller may read everywhere they live; DELETE needs Users.DELETE on each of those domains", async () => {
    expect((await auth.users.list(as("eastie"))).map((u) => u.userName)).toEqual(["eastie", "u1", "u2"]);
    expect(await refusal(() => auth.users.delete(as("eastie"), "alice"))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => auth.users.delete(as("eastie"), "ghost"))).toBe("USER_NOT_FOUND");
    await auth.users.delete(as("alice"), "u2");
    expect(await auth.store.user("u2")).toBeUndefined();
  });

  it("raising Read to ReadWrite counts every grant as new", async () => {
    // u1 holds Things.READ on east; eastie holds it too, so raising is allowed, and the grant stays.
    const raised = await auth.users.update(as("eastie"), "u1", { role: "ReadWrite" });
    expect(raised).toMatchObject({ role: "ReadWrite", privileges: { east: ["Things.READ"] } });
  });
});

describe("identity: domains and API keys, in the service", () => {
  it("a domain is made under a parent the caller may create on, and deleted only when empty", async () => {
    expect(await refusal(() => auth.domains.create(as("eastie"), { id: "north", parent: "acme" }))).toBe(
      "NOT_AUTHORIZED",
    );
    const north = await auth.domains.create(as("alice"), { id: "north", parent: "acme", label: "North" });
    expect(north.path).toBe("root/acme/north");
    expect(auth.domains.list(as("alice")).map((d) => d.id)).toContain("north");
    expect(auth.domains.list(as("eastie")).map((d) => d.id)).not.toContain("north");
    expect(await refusal(() => auth.domains.delete(as("alice"), "east"))).toBe("INVALID_ARGUMENTS");
    await auth.domains.delete(as("alice"), "north");
    expect(auth.identity.domain("north")).toBeUndefined();
  });

  it("API keys are managed on root only; a key added is accepted at once, one deleted no longer", async () => {
    expect(await refusal(() => auth.apiKeys.list(as("alice")))).toBe("NOT_AUTHORIZED");
    const info = await auth.apiKeys.add(as("admin"), "unit-key-0002", "unit");
    expect(auth.identity.isApiKey("unit-key-0002")).toBe(true);
    expect(auth.identity.isApiKey(API_KEY)).toBe(true);
    expect((await auth.apiKeys.list(as("admin"))).map((k) => k.label)).toContain("unit");
    await auth.apiKeys.delete(as("admin"), info.id);
    expect(auth.identity.isApiKey("unit-key-0002")).toBe(false);
    expect(await refusal(() => auth.apiKeys.delete(as("admin"), info.id))).toBe("API_KEY_NOT_FOUND");
  });
});

describe("identity: refresh tokens in the SQLite store", () => {
  it("each refresh token is good for one exchange; presenting a used one revokes its family", async () => {
    const first = await auth.tokens.issue("alice");
    expect(await auth.tokens.verify(first.token, "access")).toBe("alice");
    const grant = await auth.tokens.redeem(first.refreshToken);
    expect(grant?.userName).toBe("alice");
    const second = await auth.tokens.issue("alice", grant!.family);
    expect(await auth.tokens.redeem(first.refreshToken)).toBeUndefined();
    // The reuse revoked the family: the newest token of that login is refused too.
    expect(await auth.tokens.redeem(second.refreshToken)).toBeUndefined();
  });

  it("an expired refresh token is refused by the clock that issued it", async () => {
    const issued = await auth.tokens.issue("alice");
    now += 8 * 24 * 3600_000;
    expect(await auth.tokens.redeem(issued.refreshToken)).toBeUndefined();
  });
});
