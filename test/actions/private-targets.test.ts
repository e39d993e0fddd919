import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addressProblem,
  checkActionConfig,
  hostAddresses,
  isPrivateAddress,
  isPrivateHost,
  normalHost,
  publicOnlyLookup,
  type Outbox,
} from "../../src/actions/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { standaloneOutbox } from "../support/outbox.js";
import { startTestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { Receiver, triggered, until } from "./support.js";

let db: Db;
let outbox: Outbox;
let hook: Receiver;

beforeAll(async () => {
  hook = await new Receiver().start();
  db = openDatabase({ dataDir: ":memory:", migrations });
  outbox = standaloneOutbox(db);
  await outbox.start();
});
afterAll(async () => {
  await outbox.stop();
  db.close();
  await hook.close();
});

const row = (key: string) =>
  db
    .prepare<[string], { status: string; attempts: number; last_error: string }>(
      "SELECT status, attempts, last_error FROM action_outbox WHERE idempotency_key = ?",
    )
    .get(key);

describe("webhook targets without DMS_WEBHOOK_ALLOW_PRIVATE", () => {
  it("classifies loopback, link-local and private addresses", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.0.5",
      "169.254.169.254",
      "::1",
      "fe80::1",
      "fd00::5",
      "::ffff:127.0.0.1",
      "0.0.0.0",
    ]) {
      expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    }
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "172.32.0.1"])
      expect([a, isPrivateAddress(a)]).toEqual([a, false]);
  });

  it("a substituted uri that lands on a loopback address is refused at once: a dead letter, nothing sent", async () => {
    const port = new URL(hook.url).port;
    const action = triggered(
      "WEBHOOK",
      { uri: "http://${observation.host}:" + port + "/x", body: "x" },
      { state: { host: "127.0.0.1" } },
    );
    await outbox.accept([action]);
    await until(() => row(action.idempotencyKey)?.status === "dead", "dead letter");
    expect(row(action.idempotencyKey)).toMatchObject({ attempts: 1 });
    expect(row(action.idempotencyKey)!.last_error).toContain("not a public address: loopback");
    expect(hook.requests).toHaveLength(0);
  });

  it("a name that resolves to a private address is refused at connect time", async () => {
    const name = hostname();
    const resolved = await lookup(name).catch(() => undefined);
    if (!resolved || !isPrivateAddress(resolved.address)) return; // needs a host name that resolves locally
    const port = new URL(hook.url).port;
    const action = triggered("WEBHOOK", { uri: `http://${name}:${port}/x`, body: "x" });
    await outbox.accept([action]);
    await until(() => row(action.idempotencyKey)?.status === "dead", "dead letter");
    expect(row(action.idempotencyKey)!.last_error).toContain("not a public address");
    expect(hook.requests).toHaveLength(0);
  });

  it("an action the outbox cannot deliver at all (unknown type, a ${} that does not parse) goes dead at once", async () => {
    const badTemplate = triggered("WEBHOOK", { uri: "https://example.com/x", body: "${1 +}" });
    const unknown = { ...triggered("EVENT", { classification: "ALARM", message: "m" }), type: "FAX" as "EVENT" };
    await outbox.accept([badTemplate, unknown]);
    await until(
      () => row(badTemplate.idempotencyKey)?.status === "dead" && row(unknown.idempotencyKey)?.status === "dead",
      "dead letters",
    );
    expect(row(badTemplate.idempotencyKey)).toMatchObject({ attempts: 1 });
    expect(row(unknown.idempotencyKey)!.last_error).toContain("unknown action type FAX");
  });
});

/** A rule on acme's type 10 with these actions. */
const ruleWith = (actions: { type: string; config: Record<string, unknown> }[]) => ({
  name: "hook",
  enabled: true,
  filter: { domain: "acme", thingType: "10" },
  expression: [{ operator: "gt", resource: "temp", value: 1 }],
  threshold: { count: 1, interval: 0 },
  actions,
});

/** Spellings of a non-public host and the one spelling each is classified and looked up as. */
const HOST_SPELLINGS: [string, string][] = [
  ["localhost.", "localhost"],
  ["LOCALHOST", "localhost"],
  ["LocalHost.", "localhost"],
  ["localhost..", "localhost"],
  ["API.Localhost.", "api.localhost"],
  ["%6c%6fcalhost", "localhost"],
  ["localhost%2E", "localhost"],
  ["%4C%4F%43%41%4C%48%4F%53%54", "localhost"],
  ["\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54", "localhost"], // fullwidth, mapped by IDNA
  ["xn--bcher-kva.localhost", "xn--bcher-kva.localhost"],
  ["b\u00fccher.localhost.", "xn--bcher-kva.localhost"], // IDNA to punycode
  ["127.0.0.1.", "127.0.0.1"],
  ["127.1", "127.0.0.1"],
  ["127.1.", "127.0.0.1"],
  ["0x7f000001", "127.0.0.1"],
  ["0x7f000001..", "127.0.0.1"],
  ["%31%32%37.0.0.1", "127.0.0.1"],
];

describe("a host name in any spelling is normalised once, then classified", () => {
  it("normalHost gives each spelling its one form (trailing dots, case, percent-encoding, IDNA, IPv4 numbers)", () => {
    for (const [spelling, normal] of HOST_SPELLINGS)
      expect([spelling, normalHost(spelling)]).toEqual([spelling, normal]);
    expect(normalHost("Hooks.Example.COM.")).toBe("hooks.example.com");
    expect(normalHost("[::1]")).toBe("::1");
    expect(normalHost("a b")).toBe("");
  });

  it("the check without lookup refuses every spelling, and a name that is no host name", () => {
    for (const [spelling] of HOST_SPELLINGS) expect([spelling, isPrivateHost(spelling)]).toEqual([spelling, true]);
    expect(isPrivateHost("a b")).toBe(true);
    expect(isPrivateHost("Hooks.Example.COM.")).toBe(false);
  });

  it("the connect-time lookup refuses every spelling before it resolves anything", async () => {
    for (const [spelling] of HOST_SPELLINGS) {
      const code = await new Promise<string | undefined>((resolve) =>
        publicOnlyLookup(spelling, {}, (err) => resolve(err?.code)),
      );
      expect([spelling, code]).toEqual([spelling, "EPRIVATETARGET"]);
    }
  });

  it("a substituted uri in another spelling of localhost is refused at delivery: a dead letter, nothing sent", async () => {
    const port = new URL(hook.url).port;
    const actions = ["localhost.", "LOCALHOST", "%6c%6fcalhost"].map((host) =>
      triggered("WEBHOOK", { uri: "http://${observation.host}:" + port + "/x", body: "x" }, { state: { host } }),
    );
    await outbox.accept(actions);
    await until(() => actions.every((a) => row(a.idempotencyKey)?.status === "dead"), "dead letters");
    for (const a of actions) expect(row(a.idempotencyKey)!.last_error).toContain("not a public address: localhost");
    expect(hook.requests).toHaveLength(0);
  });

  it("POST /rules refuses http://localhost.:PORT/x as INVALID_RULE_CONFIG naming uri", async () => {
    const t = await startTestDms();
    try {
      const res = await t.call("POST", "/rules", {
        user: "alice",
        body: ruleWith([
          { type: "WEBHOOK", config: { uri: `http://localhost.:${new URL(hook.url).port}/x`, body: "x" } },
        ]),
      });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ messageKey: "INVALID_RULE_CONFIG", property: "actions.0.config.uri" });
    } finally {
      await t.close();
    }
  });
});

// Private targets in disguise ([::7f00:1], [::ffff:0:7f00:1], [64:ff9b::7f00:1], 198.18.0.1, the host's own
// address) are refused: classification is ipaddr.js' range() with embedded IPv4 unwrapped.
describe("the class of non-public addresses, in every form, refused at validation", () => {
  const refused: [string, string][] = [
    // IPv4 ranges
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.1.2.3", "private"],
    ["172.20.0.1", "private"],
    ["192.168.0.5", "private"],
    ["169.254.169.254", "link-local (cloud metadata)"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.254", "carrier-grade NAT"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.1", "benchmarking"],
    ["192.0.2.1", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["192.0.0.8", "IETF protocol assignments"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    // IPv4 literals the URL parser normalises
    ["2130706433", "decimal loopback"],
    ["0x7f.1", "hex loopback"],
    ["0177.0.0.1", "octal loopback"],
    // IPv6 ranges
    ["[::1]", "loopback"],
    ["[::]", "unspecified"],
    ["[fe80::1]", "link-local"],
    ["[fec0::1]", "site-local"],
    ["[fd00::5]", "unique-local"],
    ["[fc00::1]", "unique-local"],
    ["[ff02::1]", "multicast"],
    ["[2001:db8::1]", "documentation"],
    ["[2001:2::1]", "benchmarking"],
    ["[100::1]", "discard"],
    // IPv6 forms that carry an IPv4 address
    ["[::ffff:127.0.0.1]", "IPv4-mapped"],
    ["[::ffff:7f00:1]", "IPv4-mapped, hex"],
    ["[::ffff:10.0.0.1]", "IPv4-mapped private"],
    ["[::7f00:1]", "IPv4-compatible"],
    ["[::127.0.0.1]", "IPv4-compatible, dotted"],
    ["[::a9fe:a9fe]", "IPv4-compatible link-local"],
    ["[::ffff:0:7f00:1]", "SIIT (rfc6145)"],
    ["[64:ff9b::7f00:1]", "NAT64"],
    ["[64:ff9b::a00:1]", "NAT64 private"],
    ["[64:ff9b:1::808:808]", "local-use NAT64"],
    ["[2002:7f00:1::]", "6to4 of loopback"],
    ["[2002:c0a8:1::1]", "6to4 of private"],
    ["[2001:0:4136:e378:8000:63bf:80ff:fffe]", "Teredo to loopback client"],
    ["[2001:0:a00:1::1]", "Teredo with a private server"],
    ["localhost", "localhost name"],
    ["api.localhost", "localhost name"],
    // Other spellings of the same hosts, normalised once before they are classified
    ...HOST_SPELLINGS.map(([spelling]): [string, string] => [spelling, "another spelling"]),
  ];
  const publicOnes = [
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "100.128.0.1",
    "198.20.0.1",
    "[2606:4700::1111]",
    "[::ffff:8.8.8.8]",
    "[64:ff9b::808:808]",
    "[2002:808:808::1]",
    "hooks.example.com",
  ];
  const check = (host: string) =>
    checkActionConfig("WEBHOOK", { uri: `http://${host}:8080/x`, body: "x" }, { allowPrivateWebhooks: false });

  for (const [host, what] of refused) {
    it(`refuses ${host} (${what}) as INVALID_RULE_CONFIG on uri`, () => {
      expect(check(host)).toMatchObject({ ok: false, path: ["uri"] });
    });
  }
  it("accepts public unicast addresses and names, and every address with DMS_WEBHOOK_ALLOW_PRIVATE", () => {
    for (const host of publicOnes) expect([host, check(host).ok]).toEqual([host, true]);
    for (const [host] of refused) {
      const allowed = checkActionConfig(
        "WEBHOOK",
        { uri: `http://${host}:8080/x`, body: "x" },
        { allowPrivateWebhooks: true },
      );
      expect([host, allowed.ok]).toEqual([host, true]);
    }
  });

  it("refuses the host's own interface addresses, whatever their range", () => {
    const own = hostAddresses();
    expect(own.length).toBeGreaterThan(0);
    for (const a of own) expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    // An own address that is public unicast is refused for being this host's.
    expect(addressProblem("8.8.8.8", ["10.0.0.1", "8.8.8.8"])).toBe("an address of this host");
    expect(addressProblem("[2606:4700:0::1111]", ["2606:4700::1111"])).toBe("an address of this host");
    expect(addressProblem("8.8.8.8", ["10.0.0.1"])).toBeUndefined();
  });
});

describe("names are resolved and checked, at CREATE and at connect", () => {
  it("CREATE and the dry run refuse a name that resolves to loopback now (INVALID_RULE_CONFIG naming uri)", async () => {
    const resolved = await lookup("vm").catch(() => undefined);
    if (!resolved || !isPrivateAddress(resolved.address)) return; // needs /etc/hosts to map `vm` to loopback
    const t = await startTestDms();
    try {
      const res = await t.call("POST", "/rules", {
        user: "alice",
        body: ruleWith([
          { type: "EVENT", config: { classification: "ALARM", message: "m" } },
          { type: "WEBHOOK", config: { uri: "http://vm:8080/x", body: "x" } },
        ]),
      });
      expect(res.status).toBe(400);
      const body = await json(res);
      expect(body).toMatchObject({ messageKey: "INVALID_RULE_CONFIG", property: "actions.1.config.uri" });
      expect(body.message).toContain("resolves to");
    } finally {
      await t.close();
    }
  });

  it("with DMS_WEBHOOK_ALLOW_PRIVATE a name is delivered to the loopback peer it resolves to; a 3xx is not followed", async () => {
    const resolved = await lookup("vm").catch(() => undefined);
    if (!resolved || resolved.address !== "127.0.0.1") return;
    // An outbox of its own: the one of this file refuses private targets and would claim these rows.
    const ownDb = openDatabase({ dataDir: ":memory:", migrations });
    const allowed = standaloneOutbox(ownDb, { env: { DMS_WEBHOOK_ALLOW_PRIVATE: "true" } });
    await allowed.start();
    const own = (key: string) =>
      ownDb
        .prepare<[string], { status: string; last_error: string }>(
          "SELECT status, last_error FROM action_outbox WHERE idempotency_key = ?",
        )
        .get(key);
    const peer = await new Receiver().start();
    try {
      const port = new URL(peer.url).port;
      peer.respond = (r) =>
        r.url === "/moved"
          ? { status: 302, headers: { location: `http://vm:${port}/ok?redirected` } }
          : { status: 200 };
      const ok = triggered("WEBHOOK", { uri: `http://vm:${port}/ok`, body: "x" });
      const moved = triggered("WEBHOOK", {
        uri: `http://vm:${port}/moved`,
        body: "x",
        retry: { interval: 600, maxAttempts: 0, backOffRate: 1 },
      });
      await allowed.accept([ok, moved]);
      await until(
        () => own(ok.idempotencyKey)?.status === "delivered" && own(moved.idempotencyKey)?.status === "dead",
        "one delivered, one dead",
      );
      expect(own(moved.idempotencyKey)!.last_error).toContain("HTTP 302");
      expect(peer.requests.map((r) => r.url).sort()).toEqual(["/moved", "/ok"]);
    } finally {
      await allowed.stop();
      ownDb.close();
      await peer.close();
    }
  });
});
