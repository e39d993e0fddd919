import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decodeValue, engineMigrations, RuleEngine, SqliteStateStore, type ThingInfo } from "../../src/engine/index.js";
import type { Rule } from "../../src/rules/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { CollectingSink, hot } from "./support.js";

const thing: ThingInfo = {
  thingName: "t1",
  thingType: "10",
  domain: "acme",
  domains: new Set(["root", "acme"]),
  checks: new Map(),
};
const count3 = { count: 3, interval: 0 };
const warm: Rule = { ...hot, id: "warm", threshold: count3 };
const humid: Rule = {
  ...hot,
  id: "humid",
  expression: [{ operator: "gt", resource: "hum", value: 30 }],
  threshold: count3,
};

let dir: string | undefined;
let db: Db | undefined;
afterEach(() => {
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  db = dir = undefined;
});

function start(): { engine: RuleEngine; sink: CollectingSink; doc: () => { thresholds?: unknown } } {
  dir ??= mkdtempSync(join(tmpdir(), "dms-thresholds-"));
  db?.close();
  const opened = (db = openDatabase({ dataDir: dir, migrations: engineMigrations }));
  const sink = new CollectingSink();
  const engine = new RuleEngine({
    resolveThing: (name) => (name === "t1" ? thing : undefined),
    state: new SqliteStateStore(opened),
    sink,
    clock: () => 1_000_000,
  });
  engine.load([warm, humid]);
  const select = opened.prepare<[string], { doc: string }>("SELECT doc FROM engine_thing_state WHERE thing_name = ?");
  return { engine, sink, doc: () => JSON.parse(select.get("t1")!.doc) as { thresholds?: unknown } };
}

let ts = 0;
const observe = (engine: RuleEngine, state: Record<string, unknown>) =>
  engine.handle([decodeValue({ thingName: "t1", timestamp: ++ts, state }, { source: "http" })]);

describe("threshold entries", () => {
  it("an entry that no longer matters is reused by the next rule; the store keeps live entries only", async () => {
    const { engine, doc } = start();
    await observe(engine, { temp: 31 });
    // Five values an entry: ruleId, count, lastFiredAt, lastSeq, version.
    expect(doc().thresholds).toEqual(["warm", 1, 0, 1, expect.any(Number)]);
    // temp is observed and does not match: warm's count is over, its entry inert, and none is stored.
    await observe(engine, { temp: 10 });
    expect(engine.thingState("t1")!.thresholds).toHaveLength(1);
    expect(doc().thresholds).toBeUndefined();
    // humid takes the inert entry over.
    await observe(engine, { hum: 31 });
    expect(engine.thingState("t1")!.thresholds).toEqual([expect.objectContaining({ ruleId: "humid", count: 1 })]);
    expect(doc().thresholds).toEqual(["humid", 1, 0, 3, expect.any(Number)]);
  });

  it("counts resume after a restart from the live entries, and a rule seen again counts from one", async () => {
    let run = start();
    await observe(run.engine, { temp: 31, hum: 31 });
    await observe(run.engine, { temp: 31, hum: 10 });
    run = start();
    // warm at 2 resumes and fires; humid was reset and starts over.
    await observe(run.engine, { temp: 31, hum: 31 });
    expect(run.sink.actions.map((a) => a.ruleId)).toEqual(["warm"]);
    await observe(run.engine, { temp: 10, hum: 31 });
    await observe(run.engine, { hum: 31 });
    expect(run.sink.actions.map((a) => a.ruleId)).toEqual(["warm", "humid"]);
  });

  it("a document of the earlier layout (an object per entry) is read: its count resumes", async () => {
    let run = start();
    await observe(run.engine, { temp: 31 });
    await observe(run.engine, { temp: 31 });
    const [ruleId, count, lastFiredAt, lastSeq, version] = run.doc().thresholds as [
      string,
      number,
      number,
      number,
      number,
    ];
    db!
      .prepare("UPDATE engine_thing_state SET doc = ? WHERE thing_name = 't1'")
      .run(JSON.stringify({ state: { temp: 31 }, thresholds: [{ ruleId, count, lastFiredAt, lastSeq, version }] }));
    run = start();
    expect(run.engine.thingState("t1")!.thresholds).toEqual([
      { ruleId: "warm", count: 2, lastFiredAt: 0, lastSeq: 2, version },
    ]);
    await observe(run.engine, { temp: 31 });
    expect(run.sink.actions.map((a) => a.ruleId)).toEqual(["warm"]);
  });
});
