import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPrivateAddress, type Outbox } from "../../src/actions/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { standaloneOutbox } from "../support/outbox.js";
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
    expect(row(action.idempotencyKey)!.last_error).toContain("private");
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
    expect(row(action.idempotencyKey)!.last_error).toContain("private address");
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
