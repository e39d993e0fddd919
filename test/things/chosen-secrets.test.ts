import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashSecret } from "../../src/auth/index.js";
import type { Provision } from "../../src/provision/index.js";
import {
  MIN_CHOSEN_SECRET_LENGTH,
  generateDeviceSecret,
  hashChosenSecret,
  isDeviceSecretHash,
} from "../../src/things/index.js";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { connectAs } from "../support/device.js";
import { json } from "../support/http.js";

const run = promisify(execFile);

/** A chosen secret of the minimum length, distinct per `n`. */
const chosen = (n: number): string => `chosen-${n}-`.padEnd(MIN_CHOSEN_SECRET_LENGTH, "x");

function storedHash(t: TestDms, thingName: string): string {
  const row = t.dms.services.db!.prepare("SELECT secret_hash FROM things WHERE thing_name = ?").get(thingName) as {
    secret_hash: string;
  };
  return row.secret_hash;
}

describe("operator-supplied device secrets", () => {
  const prehashedSecret = chosen(9000);
  let t: TestDms;
  beforeAll(async () => {
    const provision: Provision = {
      ...BASE_PROVISION,
      things: [
        ...BASE_PROVISION.things!,
        ...Array.from({ length: 200 }, (_, i) => ({
          thingName: `c${i}`,
          thingType: "10",
          domain: "acme",
          secret: chosen(i),
        })),
        { thingName: "g1", thingType: "10", domain: "acme", secret: generateDeviceSecret() },
        { thingName: "h1", thingType: "10", domain: "acme", secretHash: await hashChosenSecret(prehashedSecret) },
      ],
    };
    t = await startTestDms({ provision, env: { DMS_ROLES: "api,mqtt", DMS_MQTT_PORT: "0" } });
  }, 120_000);
  afterAll(() => t.close());

  it("are provisioned with PBKDF2, not scrypt, and the devices connect", async () => {
    const work = t.dms.services.registry.credentials.work;
    expect(work.kdf).toBe(0);
    expect(work.pbkdf2).toBeGreaterThanOrEqual(200);
    expect(isDeviceSecretHash(storedHash(t, "c7"))).toBe(true);
    const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => connectAs(t, `c${i}`, chosen(i))));
    expect(outcomes.every((o) => o === "connected")).toBe(true);
    expect(await connectAs(t, "c7", chosen(8))).toMatch(/Bad username or password/);
  });

  it("a pre-hashed secret is stored as given and lets its device in", async () => {
    expect(storedHash(t, "h1")).toMatch(/^pbkdf2-sha512\$101\$/);
    expect(await connectAs(t, "h1", prehashedSecret)).toBe("connected");
    expect(await connectAs(t, "h1", chosen(9001))).toMatch(/Bad username or password/);
  });

  it("connects with each stored scheme: keyed, PBKDF2, and an older scrypt hash, which moves to PBKDF2", async () => {
    expect(storedHash(t, "g1")).toMatch(/^hmac-sha256\$/);
    const secret = chosen(5000);
    const scrypt = await hashSecret(secret);
    t.dms.services.db!.prepare("UPDATE things SET secret_hash = ? WHERE thing_name = 'c0'").run(scrypt);
    expect(await connectAs(t, "c0", chosen(0))).toMatch(/Bad username or password/);
    expect(await connectAs(t, "c0", secret)).toBe("connected");
    expect(isDeviceSecretHash(storedHash(t, "c0"))).toBe(true);
    expect(await connectAs(t, "c0", secret)).toBe("connected");
    // A short secret stored as scrypt by an older version still connects, and stays scrypt.
    const short = await hashSecret("short-pw");
    t.dms.services.db!.prepare("UPDATE things SET secret_hash = ? WHERE thing_name = 'c1'").run(short);
    expect(await connectAs(t, "c1", "short-pw")).toBe("connected");
    expect(storedHash(t, "c1")).toBe(short);
  });

  it("a chosen secret shorter than the minimum is refused with INVALID_ARGUMENTS", async () => {
    const short = "x".repeat(MIN_CHOSEN_SECRET_LENGTH - 1);
    const created = await t.call("POST", "/admin/things", {
      user: "admin",
      body: { thingName: "s1", thingType: "10", domain: "acme", secret: short },
    });
    expect(created.status).toBe(400);
    expect(await json(created)).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "secret" });
    const patched = await t.call("PATCH", "/admin/things/c2", { user: "admin", body: { secret: short } });
    expect(patched.status).toBe(400);
    expect(await connectAs(t, "c2", chosen(2))).toBe("connected");
  });
});

describe("provisioning files with chosen secrets", () => {
  const dir = mkdtempSync(join(tmpdir(), "dms-secrets-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a short secret and a malformed secretHash, naming the thing", async () => {
    const withThing = (thing: object): Provision => ({
      ...BASE_PROVISION,
      things: [...BASE_PROVISION.things!, { thingName: "bad", thingType: "10", domain: "acme", ...thing }],
    });
    await expect(startTestDms({ provision: withThing({ secret: "too-short" }) })).rejects.toThrow(
      /things\.\d+ \(bad\): .*at least 20 characters/,
    );
    await expect(startTestDms({ provision: withThing({ secretHash: "pbkdf2-sha512$1$abc$def" }) })).rejects.toThrow(
      /things\.\d+ \(bad\): Property secretHash is invalid/,
    );
  }, 120_000);

  it("npm run provision:hash turns each secret into a secretHash that verifies", async () => {
    const file = join(dir, "in.json");
    const things = [
      { thingName: "p1", thingType: "10", domain: "acme", secret: chosen(1) },
      { thingName: "p2", thingType: "10", domain: "acme" },
    ];
    writeFileSync(file, JSON.stringify({ ...BASE_PROVISION, things: [...BASE_PROVISION.things!, ...things] }));
    const { stdout } = await run("npx", ["tsx", "scripts/provision-hash.ts", file]);
    const hashed = JSON.parse(stdout) as Provision;
    const p1 = hashed.things!.find((x) => x.thingName === "p1")!;
    expect(p1).not.toHaveProperty("secret");
    expect(isDeviceSecretHash((p1 as { secretHash: string }).secretHash)).toBe(true);
    expect(hashed.things!.find((x) => x.thingName === "p2")).not.toHaveProperty("secretHash");
    const t = await startTestDms({ provision: hashed });
    try {
      expect(await t.dms.services.registry.verifyThingSecret("p1", chosen(1))).toBe(true);
      expect(await t.dms.services.registry.verifyThingSecret("p1", chosen(2))).toBe(false);
    } finally {
      await t.close();
    }
    writeFileSync(file, JSON.stringify({ things: [{ thingName: "p3", secret: "short" }] }));
    await expect(run("npx", ["tsx", "scripts/provision-hash.ts", file])).rejects.toThrow(/thing p3: a secret needs 20/);
  }, 120_000);
});
