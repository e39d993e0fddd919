import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashSecret } from "../../src/auth/index.js";
import type { Provision } from "../../src/provision/index.js";
import { DeviceCredentials, generateDeviceSecret, isGeneratedSecret } from "../../src/things/index.js";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { connectAs } from "../support/device.js";
import { json, type Payload } from "../support/http.js";

/** BASE_PROVISION plus `count` things of type 10 in acme, each with its own generated secret. */
function fleet(count: number, secrets: string[] = []): Provision {
  for (let i = secrets.length; i < count; i++) secrets.push(generateDeviceSecret());
  return {
    ...BASE_PROVISION,
    things: [
      ...BASE_PROVISION.things!,
      ...secrets.slice(0, count).map((secret, i) => ({
        thingName: `f${i}`,
        thingType: "10",
        domain: "acme",
        serial: `SN-F${i}`,
        secret,
      })),
    ],
  };
}

function mqttEnv(): Record<string, string> {
  return { DMS_ROLES: "api,mqtt", DMS_MQTT_PORT: "0" };
}

describe("device secrets: generated ones keyed, chosen ones through PBKDF2", () => {
  const credentials = new DeviceCredentials({ key: Buffer.alloc(32, 7) });

  it("a generated secret has 192 random bits and a checksum; one typed by hand is never taken for one", () => {
    const secret = generateDeviceSecret();
    expect(secret).toMatch(/^dmsd_[A-Za-z0-9_-]{38}$/);
    expect(isGeneratedSecret(secret)).toBe(true);
    expect(generateDeviceSecret()).not.toBe(secret);
    // Same shape, one character changed: the checksum no longer holds.
    const typo = secret.slice(0, 10) + (secret[10] === "A" ? "B" : "A") + secret.slice(11);
    expect(isGeneratedSecret(typo)).toBe(false);
    expect(isGeneratedSecret(`dmsd_${"a".repeat(38)}`)).toBe(false);
    expect(isGeneratedSecret("dev-pw-0123456789abcdef")).toBe(false);
  });

  it("hashes a generated secret with the keyed hash, bound to its thing, and checks it synchronously", () => {
    const secret = generateDeviceSecret();
    const stored = credentials.hash("t1", secret);
    expect(typeof stored).toBe("string");
    expect(stored).toMatch(/^hmac-sha256\$[0-9a-f]{8}\$/);
    expect(credentials.verify("t1", secret, stored as string)).toEqual({ ok: true });
    expect(credentials.verify("t1", generateDeviceSecret(), stored as string)).toEqual({ ok: false });
    // The hash copied onto another thing's row does not let the secret in there.
    expect(credentials.verify("t2", secret, stored as string)).toEqual({ ok: false });
    // Made with another server key: refused, not misread.
    const other = new DeviceCredentials({ key: Buffer.alloc(32, 8) });
    expect(other.verify("t1", secret, stored as string)).toEqual({ ok: false });
  });

  it("a chosen secret goes through PBKDF2; a wrong one never meets the right one's cache entry", async () => {
    const c = new DeviceCredentials({ key: Buffer.alloc(32, 7) });
    const stored = await c.hash("t1", "dev-pw-0123456789abcdef");
    expect(stored).toMatch(/^pbkdf2-sha512\$101\$/);
    expect(c.work.pbkdf2).toBe(1);
    expect(await c.verify("t1", "dev-pw-0123456789abcdef", stored)).toEqual({ ok: true });
    expect(c.work).toMatchObject({ pbkdf2: 2, kdf: 0, cacheHits: 0 });
    expect(await c.verify("t1", "dev-pw-0123456789abcdef", stored)).toEqual({ ok: true });
    expect(c.work).toMatchObject({ pbkdf2: 2, cacheHits: 1 });
    expect(await c.verify("t1", "dev-pX", stored)).toEqual({ ok: false });
    expect(c.work).toMatchObject({ pbkdf2: 3, cacheHits: 1 });
    // A new secret (another stored hash) does not inherit the old entry.
    const other = await c.hash("t1", "dev-pw2-0123456789abcdef");
    expect(await c.verify("t1", "dev-pw-0123456789abcdef", other)).toEqual({ ok: false });
  });

  it("a generated secret stored by an older version as scrypt still works and moves to the keyed hash", async () => {
    const secret = generateDeviceSecret();
    const verdict = await credentials.verify("t1", secret, await hashSecret(secret));
    expect(verdict.ok).toBe(true);
    expect(verdict.upgrade).toMatch(/^hmac-sha256\$/);
    expect(credentials.verify("t1", secret, verdict.upgrade!)).toEqual({ ok: true });
  });
});

describe("a restart with 10,000 unchanged things", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dms-fleet-"));
  const secrets: string[] = [];
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("hashes no secret again, writes nothing, and a changed secret takes effect with the old one refused", async () => {
    const first = await startTestDms({ dataDir, provision: fleet(10_000, secrets), env: mqttEnv() });
    const created = first.dms.services.registry.credentials.work;
    // 10,000 generated secrets keyed, the 3 chosen ones of BASE_PROVISION through PBKDF2.
    expect(created).toMatchObject({ keyed: 10_000, pbkdf2: 3, kdf: 0 });
    const rows = first.dms.services.db!.prepare("SELECT * FROM things ORDER BY thing_name").all();
    expect(await connectAs(first, "f42", secrets[42]!)).toBe("connected");
    await first.close();

    const second = await startTestDms({ dataDir, provision: fleet(10_000, secrets), env: mqttEnv() });
    try {
      expect(second.dms.services.registry.credentials.work).toEqual({ keyed: 0, pbkdf2: 0, kdf: 0, cacheHits: 0 });
      expect(second.dms.services.db!.prepare("SELECT * FROM things ORDER BY thing_name").all()).toEqual(rows);
      expect(await connectAs(second, "f42", secrets[42]!)).toBe("connected");
      expect(await connectAs(second, "t1", "dev-pw-0123456789abcdef")).toBe("connected");
    } finally {
      await second.close();
    }

    // One generated and one chosen secret changed in the file: only those two are hashed.
    const old42 = secrets[42]!;
    secrets[42] = generateDeviceSecret();
    const changed = fleet(10_000, secrets);
    changed.things = changed.things!.map((t) =>
      t.thingName === "t1" ? { ...t, secret: "t1-new-pw-0123456789abcdef" } : t,
    );
    const third = await startTestDms({ dataDir, provision: changed, env: mqttEnv() });
    try {
      // t1: the old hash checked (1), the new secret hashed (1); f42: its new keyed hash (1).
      expect(third.dms.services.registry.credentials.work).toMatchObject({ keyed: 1, pbkdf2: 2, kdf: 0 });
      expect(await connectAs(third, "f42", secrets[42]!)).toBe("connected");
      expect(await connectAs(third, "f42", old42)).toMatch(/Bad username or password/);
      expect(await connectAs(third, "t1", "t1-new-pw-0123456789abcdef")).toBe("connected");
      expect(await connectAs(third, "t1", "dev-pw-0123456789abcdef")).toMatch(/Bad username or password/);
    } finally {
      await third.close();
    }
  }, 300_000);
});

describe("device connections through the embedded broker", () => {
  let t: TestDms;
  beforeAll(async () => {
    t = await startTestDms({ env: mqttEnv() });
  });
  afterAll(() => t.close());

  it("a wrong secret is refused after a cache hit for the right one", async () => {
    const work = t.dms.services.registry.credentials.work;
    expect(await connectAs(t, "t2", "dev-pw-0123456789abcdef")).toBe("connected");
    const hashed = work.pbkdf2;
    expect(await connectAs(t, "t2", "dev-pw-0123456789abcdef")).toBe("connected");
    expect(work.pbkdf2).toBe(hashed);
    expect(work.cacheHits).toBeGreaterThan(0);
    expect(await connectAs(t, "t2", "dev-pX")).toMatch(/Bad username or password/);
    expect(await connectAs(t, "t2", "")).toMatch(/Bad username or password/);
    // The cached right secret still works after the wrong ones, and only for its own thing.
    expect(await connectAs(t, "t2", "dev-pw-0123456789abcdef")).toBe("connected");
    expect(await connectAs(t, "ghost", "dev-pw-0123456789abcdef")).toMatch(/Bad username or password/);
  }, 120_000);

  it("a secret changed over REST refuses the cached old one at once", async () => {
    expect(await connectAs(t, "e1", "dev-pw-0123456789abcdef")).toBe("connected");
    const res = await t.call("PATCH", "/admin/things/e1", { user: "admin", body: { generateSecret: true } });
    expect(res.status).toBe(200);
    const { secret } = (await json(res)) as { secret: string };
    expect(isGeneratedSecret(secret)).toBe(true);
    expect(await connectAs(t, "e1", "dev-pw-0123456789abcdef")).toMatch(/Bad username or password/);
    expect(await connectAs(t, "e1", secret)).toBe("connected");
    // Shown once: reading the thing never shows it.
    expect(await json(await t.call("GET", "/admin/things/e1", { user: "admin" }))).not.toHaveProperty("secret");
  });
});

describe("a connect storm on the embedded broker", () => {
  it("answers every device of a burst opened at once, refusing the one with a wrong secret", async () => {
    const secrets: string[] = [];
    const t = await startTestDms({ provision: fleet(400, secrets), env: mqttEnv() });
    try {
      // Connections are taken paused and handed to aedes on later turns of the loop: none is lost
      // on the way, and each gets its own answer.
      const outcomes = await Promise.all([
        ...secrets.map((secret, i) => connectAs(t, `f${i}`, secret)),
        connectAs(t, "f0", generateDeviceSecret()),
      ]);
      expect(outcomes.slice(0, -1).every((o) => o === "connected")).toBe(true);
      expect(outcomes.at(-1)).toMatch(/Bad username or password/);
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe("readiness while a large provisioning file is applied", () => {
  it("/healthz answers and /readyz is 503 with what it waits for; /readyz is 200 once started", async () => {
    const seen: { ready: number; health: number; body: Payload }[] = [];
    let started = false;
    let polling: Promise<void> = Promise.resolve();
    const t = await startTestDms({
      provision: fleet(20_000),
      start: {
        onListening: (url) => {
          polling = (async () => {
            while (!started) {
              const [ready, health] = await Promise.all([fetch(`${url}/readyz`), fetch(`${url}/healthz`)]);
              seen.push({ ready: ready.status, health: health.status, body: await ready.json() });
              await new Promise((r) => setTimeout(r, 5));
            }
          })();
        },
      },
    });
    started = true;
    await polling;
    try {
      const during = seen.filter((s) => s.ready === 503);
      expect(during.length).toBeGreaterThan(0);
      expect(seen.every((s) => s.health === 200)).toBe(true);
      expect(during[0]!.body).toMatchObject({
        status: "waiting",
        waitingFor: expect.arrayContaining([
          expect.objectContaining({ name: "provisioning", ready: false }),
        ]) as unknown,
      });
      const details = during.flatMap((s) =>
        (s.body as { waitingFor: { detail: string }[] }).waitingFor.map((w) => w.detail),
      );
      expect(details.some((d) => /^things \d+ of 20003 applied$/.test(d))).toBe(true);
      const after = await t.call("GET", "/readyz");
      expect(after.status).toBe(200);
      expect(await json(after)).toEqual({
        status: "ready",
        conditions: [
          { name: "database", ready: true },
          { name: "provisioning", ready: true },
          { name: "components", ready: true },
        ],
      });
    } finally {
      await t.close();
    }
  }, 300_000);
});

describe("bulk things over REST", () => {
  let t: TestDms;
  beforeAll(async () => {
    t = await startTestDms();
  });
  afterAll(() => t.close());

  it("POST /admin/things/bulk creates each thing it may and answers an error for each it may not", async () => {
    const res = await t.call("POST", "/admin/things/bulk", {
      user: "alice",
      body: {
        things: [
          { thingName: "b1", thingType: "10", domain: "acme", generateSecret: true },
          { thingName: "t1", thingType: "10", domain: "acme" },
          { thingName: "b2", thingType: "nope", domain: "acme" },
          { thingName: "b3", thingType: "10", domain: "other" },
          { thingName: "b4", thingType: "10", domain: "acme", secret: "chosen-pw-0123456789abcdef", serial: "SN1" },
          {
            thingName: "b5",
            thingType: "10",
            domain: "acme",
            secret: "x-pw-0123456789abcdefghij",
            generateSecret: true,
          },
          { thingName: "b6", thingType: "10", domain: "east", secret: "chosen-pw-0123456789abcdef", label: "Six" },
          { thingName: "b1", thingType: "10", domain: "acme" },
        ],
      },
    });
    expect(res.status).toBe(200);
    const body = (await json(res)) as { created: Payload[]; errors: Payload[] };
    expect(body.created.map((c: { thingName: string }) => c.thingName)).toEqual(["b1", "b6"]);
    expect(isGeneratedSecret(body.created[0].secret as string)).toBe(true);
    expect(body.created[1]).not.toHaveProperty("secret");
    expect(body.created[1]).toMatchObject({ domain: "east", label: "Six", serial: null });
    expect(body.errors).toEqual([
      { index: 1, thingName: "t1", messageKey: "ALREADY_EXISTS", property: "thingName", message: expect.any(String) },
      {
        index: 2,
        thingName: "b2",
        messageKey: "THING_TYPE_NOT_FOUND",
        property: "thingType",
        message: expect.any(String),
      },
      { index: 3, thingName: "b3", messageKey: "NOT_AUTHORIZED", message: expect.any(String) },
      { index: 4, thingName: "b4", messageKey: "ALREADY_EXISTS", property: "serial", message: expect.any(String) },
      {
        index: 5,
        thingName: "b5",
        messageKey: "INVALID_ARGUMENTS",
        property: "generateSecret",
        message: expect.any(String),
      },
      { index: 7, thingName: "b1", messageKey: "ALREADY_EXISTS", property: "thingName", message: expect.any(String) },
    ]);
    const registry = t.dms.services.registry;
    expect(await registry.verifyThingSecret("b1", body.created[0].secret as string)).toBe(true);
    expect(await registry.verifyThingSecret("b6", "chosen-pw-0123456789abcdef")).toBe(true);
    expect(registry.thing("b3")).toBeUndefined();
  });

  it("PATCH /admin/things changes each thing it may, with PATCH's privileges per thing", async () => {
    const res = await t.call("PATCH", "/admin/things", {
      user: "eastie",
      body: {
        things: [
          { thingName: "e1", label: "East one" },
          { thingName: "t2", label: "not mine" },
          { thingName: "ghost", label: "nobody" },
          { thingName: "e1", domain: "acme" },
          { thingName: "e1", generateSecret: true },
        ],
      },
    });
    expect(res.status).toBe(200);
    const body = (await json(res)) as { updated: Payload[]; errors: Payload[] };
    expect(body.updated.map((u: { thingName: string; label: string }) => [u.thingName, u.label])).toEqual([
      ["e1", "East one"],
      ["e1", "East one"],
    ]);
    expect(isGeneratedSecret(body.updated[1].secret as string)).toBe(true);
    expect(body.errors.map((e: { index: number; messageKey: string }) => [e.index, e.messageKey])).toEqual([
      [1, "NOT_AUTHORIZED"],
      [2, "THING_NOT_FOUND"],
      [3, "NOT_AUTHORIZED"],
    ]);
    expect(t.dms.services.registry.thing("t2")!.label).toBeNull();
  });

  it("refuses a Read user, an empty list and more than 1,000 things as a whole", async () => {
    const one = { thingName: "r1", thingType: "10", domain: "acme" };
    const reader = await t.call("POST", "/admin/things/bulk", { user: "reader", body: { things: [one] } });
    expect(reader.status).toBe(403);
    expect((await json(reader)).messageKey).toBe("NOT_AUTHORIZED");
    const empty = await t.call("POST", "/admin/things/bulk", { user: "admin", body: { things: [] } });
    expect(empty.status).toBe(400);
    const many = Array.from({ length: 1001 }, (_, i) => ({ ...one, thingName: `r${i}` }));
    const tooMany = await t.call("POST", "/admin/things/bulk", { user: "admin", body: { things: many } });
    expect(tooMany.status).toBe(400);
    expect(await json(tooMany)).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "things" });
    const bad = await t.call("PATCH", "/admin/things", { user: "admin", body: { things: [{ label: "no name" }] } });
    expect(await json(bad)).toMatchObject({ messageKey: "PROPERTY_REQUIRED", property: "things.0.thingName" });
    expect(t.dms.services.registry.thing("r0")).toBeUndefined();
  });

  it("1,000 things with generated secrets in one call", async () => {
    const things = Array.from({ length: 1000 }, (_, i) => ({
      thingName: `m${i}`,
      thingType: "10",
      domain: "acme",
      generateSecret: true,
    }));
    const res = await t.call("POST", "/admin/things/bulk", { user: "admin", body: { things } });
    const body = (await json(res)) as { created: { thingName: string; secret: string }[]; errors: Payload[] };
    expect(body.errors).toEqual([]);
    expect(body.created).toHaveLength(1000);
    expect(new Set(body.created.map((c) => c.secret)).size).toBe(1000);
    expect(await t.dms.services.registry.verifyThingSecret("m999", body.created[999]!.secret)).toBe(true);
  });
});
