import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  decodeMessages,
  engineMigrations,
  MemoryStateStore,
  RuleEngine,
  SqliteStateStore,
  type ThingState,
} from "../../src/engine/index.js";
import type { Rule } from "../../src/rules/index.js";
import { openObservations } from "../../src/observations/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { messages, resolveThing, THINGS } from "./stream.js";
import { CollectingSink, hot } from "./support.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "dms-state-writer-"));
  dirs.push(dir);
  return dir;
}

interface Row {
  thing_name: string;
  seq: number;
  last_offset: number;
}

const rows = (db: Db): Row[] =>
  db.prepare<[], Row>("SELECT thing_name, seq, last_offset FROM engine_thing_state ORDER BY thing_name").all();

/**
 * An engine whose state is written by a thread of its own, and another connection to its database
 * that holds the write lock: the thread's commits wait until `release`.
 */
function lockedWriter() {
  const dir = dataDir();
  const db = openDatabase({ dataDir: dir, migrations: engineMigrations });
  const state = new SqliteStateStore(db, { writerThread: true });
  const engine = new RuleEngine({ resolveThing, state, sink: new CollectingSink() });
  engine.load([hot]);
  const other = openDatabase({ dataDir: dir, migrations: [] });
  other.exec("BEGIN IMMEDIATE");
  return {
    engine,
    other,
    release: () => other.exec("COMMIT"),
    async close() {
      await state.close();
      other.close();
      db.close();
    },
  };
}

describe("the engine state written by a thread of its own", () => {
  it("a batch is checkpointed only once its state is in the table", async () => {
    const { engine, other, release, close } = lockedWriter();
    let checkpointed = false;
    const handled = await engine.handle(decodeMessages(messages(0, 3)));
    expect(handled.accepted).toBe(3);
    const checkpointing = Promise.all([handled.checkpointed, engine.checkpoint()]).then(() => (checkpointed = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(checkpointed).toBe(false);
    expect(rows(other)).toEqual([]);
    release();
    await checkpointing;
    expect(rows(other)).toEqual([
      { thing_name: "t0", seq: 1, last_offset: 0 },
      { thing_name: "t1", seq: 1, last_offset: 1 },
      { thing_name: "t2", seq: 1, last_offset: 2 },
    ]);
    await close();
  });

  it("batches handed over while the writer waits: each thing ends as the last of them left it", async () => {
    const { engine, other, release, close } = lockedWriter();
    // Five batches over the same things, handed over while the thread waits for the lock.
    const handled = [0, 1, 2, 3, 4].map((b) => engine.handle(decodeMessages(messages(b * THINGS, (b + 1) * THINGS))));
    const checkpointed = engine.checkpoint();
    await new Promise((r) => setTimeout(r, 200));
    release();
    for (const h of handled) await (await h).checkpointed;
    await checkpointed;
    const written = rows(other);
    expect(written).toHaveLength(THINGS);
    for (const r of written) {
      const thing = Number(r.thing_name.slice(1));
      expect(r).toEqual({ thing_name: r.thing_name, seq: 5, last_offset: 4 * THINGS + thing });
    }
    await close();
  });

  it("a checkpoint that failed rejects its batches, and the engine goes back to the table before the next", async () => {
    const dir = dataDir();
    const db = openDatabase({ dataDir: dir, migrations: engineMigrations });
    const state = new SqliteStateStore(db, { writerThread: true });
    const engine = new RuleEngine({ resolveThing, state, sink: new CollectingSink() });
    await (
      await engine.handle(decodeMessages(messages(0, THINGS)))
    ).checkpointed;
    // The thread cannot write: the table is gone under it.
    db.exec("ALTER TABLE engine_thing_state RENAME TO kept");
    const failed = await engine.handle(decodeMessages(messages(THINGS, THINGS + 1)));
    await expect(Promise.all([failed.checkpointed, engine.checkpoint()])).rejects.toThrow(/engine_thing_state/);
    db.exec("ALTER TABLE kept RENAME TO engine_thing_state");
    // Handed over again, the batch is evaluated afresh on the durable state: t0 counted once more, not twice.
    await (
      await engine.handle(decodeMessages(messages(THINGS, THINGS + 1)))
    ).checkpointed;
    expect(engine.thingState("t0")).toMatchObject({ seq: 2, lastOffset: THINGS });
    await engine.checkpoint();
    expect(rows(db)).toHaveLength(THINGS);
    expect(rows(db)[0]).toEqual({ thing_name: "t0", seq: 2, last_offset: THINGS });
    await state.close();
    db.close();
  });
});

/** States with what the posted form must carry through: odd names and text, no source or offset, entries without lastSeq or version. */
function oddStates(): ThingState[] {
  const names = ["plain", "with\nnewline", 'tab\tand "quotes"', "ünïcödé", "emoji 🌡️", "", "nul\u0000byte"];
  return names.map((thingName, i) => {
    const t: ThingState = {
      thingName,
      timestamp: 1_763_000_000_000 + i,
      // A lone surrogate goes in the document (JSON escapes it), not in a name: SQLite's UTF-8 has no place for it.
      state: { temp: i, text: `${thingName}\n°C \ud800`, big: 2 ** 53 - i, frac: i / 3 },
      seq: i * 1_000_003,
    };
    if (i % 2 === 0) {
      t.lastSource = i % 4 === 0 ? "kafka:a:0" : "kafka:b:1";
      t.lastOffset = 4_000_000_000 + i;
    } else if (i === 3) t.lastSource = "http";
    else if (i === 5) t.lastOffset = 7;
    if (i % 3 === 0) t.nested = [{ type: "tyre", id: `${i}`, state: { pressure: i } }];
    t.thresholds = [
      { ruleId: `r\n${i}`, count: i + 1, lastFiredAt: 0 },
      { ruleId: "inert", count: 0, lastFiredAt: 0 },
      { ruleId: "fired", count: 0, lastFiredAt: 1_763_000_000_123, lastSeq: i, version: 4_227_879_779 },
    ];
    if (i === 7) t.thresholds = [];
    return t;
  });
}

const allRows = (db: Db): unknown[] => db.prepare("SELECT * FROM engine_thing_state ORDER BY thing_name").all();

describe("a checkpoint's rows through the writer thread", () => {
  it("are the rows the engine's own thread writes, and load back as the states were", async () => {
    const states = oddStates();
    const direct = openDatabase({ dataDir: dataDir(), migrations: engineMigrations });
    new SqliteStateStore(direct).flush(states);
    const dir = dataDir();
    const db = openDatabase({ dataDir: dir, migrations: engineMigrations });
    const threaded = new SqliteStateStore(db, { writerThread: true });
    // Three flushes while another connection holds the write lock: the thread waits on the first,
    // and takes the next two as one (each thing once, with its later state).
    const other = openDatabase({ dataDir: dir, migrations: [] });
    other.exec("BEGIN IMMEDIATE");
    const changed = [
      { ...states[2]!, seq: 99, lastOffset: 99 },
      { ...states[3]!, lastSource: undefined },
    ];
    const flushed = [threaded.flush(states), threaded.flush([changed[0]!]), threaded.flush(changed)];
    await new Promise((r) => setTimeout(r, 200));
    other.exec("COMMIT");
    other.close();
    await Promise.all(flushed);
    await threaded.close();
    new SqliteStateStore(direct).flush(changed);
    expect(allRows(db)).toEqual(allRows(direct));
    expect(allRows(db)).toHaveLength(states.length);

    const loaded = new SqliteStateStore(db);
    for (const t of [...states.slice(0, 2), ...changed, ...states.slice(4)]) {
      const expected: ThingState = { thingName: t.thingName, timestamp: t.timestamp, state: t.state, seq: t.seq };
      if (t.nested) expected.nested = t.nested;
      const live = (t.thresholds ?? []).filter((e) => e.count > 0 || e.lastFiredAt !== 0);
      if (live.length > 0) expected.thresholds = live;
      // A position is kept whole or not at all.
      if (t.lastSource !== undefined && t.lastOffset !== undefined) {
        expected.lastSource = t.lastSource;
        expected.lastOffset = t.lastOffset;
      }
      expect(loaded.thing(t.thingName)).toEqual(expected);
    }
    direct.close();
    db.close();
  });
});

/** Batches the crashing engine is handed, and their size. */
const BATCH = 200;
const STREAM = 200 * BATCH;

/** Two hot observations in a row: a count that a replay which counted twice, or lost one, would get wrong. */
const hotTwice: Rule = {
  ...hot,
  id: "hot-twice",
  expression: [{ operator: "gt", resource: "temp", value: 25 }],
  threshold: { count: 2, interval: 0 },
};

/**
 * The engine as the service runs it (observations written by a thread of their own, state by
 * checkpoints every 50 ms), fed as the Kafka source feeds it: three batches in flight, the last
 * offset of each batch printed once a checkpoint covers it (what the source commits). The sink
 * appends the idempotency keys it accepted to a file (written before `accept` resolves: the
 * outbox's durability, which a kill of the process does not undo).
 */
function crashingEngineScript(dir: string): string {
  const src = (path: string): string => JSON.stringify(resolve(path));
  return `
import { appendFileSync } from "node:fs";
import { decodeMessages, engineMigrations, RuleEngine, SqliteStateStore } from ${src("src/engine/index.ts")};
import { openObservations } from ${src("src/observations/index.ts")};
import { openDatabase } from ${src("src/store/index.ts")};
import { messages, resolveThing } from ${src("test/engine/stream.ts")};
const db = openDatabase({ dataDir: ${JSON.stringify(dir)}, migrations: engineMigrations });
const observations = openObservations({ dataDir: ${JSON.stringify(dir)}, db, writerThread: true });
const engine = new RuleEngine({
  resolveThing,
  state: new SqliteStateStore(db),
  sink: { accept: async (actions) => appendFileSync(${JSON.stringify(join(dir, "outbox"))}, actions.map((a) => a.idempotencyKey + "\\n").join("")) },
  observations: observations.store,
  checkpointMs: 50,
});
engine.load([${JSON.stringify(hotTwice)}]);
const inFlight = [];
for (let start = 0; start < ${STREAM}; start += ${BATCH}) {
  const last = start + ${BATCH} - 1;
  const handled = engine.handle(decodeMessages(messages(start, last + 1)));
  inFlight.push(handled);
  handled.then((h) => h.checkpointed).then(() => console.log("checkpointed " + last), () => {});
  if (inFlight.length >= 3) await inFlight.shift();
  // A stream's pace, so that the test's kill comes while batches are under way.
  await new Promise((r) => setTimeout(r, 5));
}
`;
}

describe("kill -9 of the engine process", () => {
  it("loses no batch a checkpoint covered, and a replay from the committed offset counts every observation once and loses no trigger", async () => {
    const dir = dataDir();
    const script = join(dir, "engine.mts");
    writeFileSync(script, crashingEngineScript(dir));
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    // Killed once it handed back 20 batches, with more in flight and their states on the way.
    let handledUpTo = -1;
    await new Promise<void>((done, failed) => {
      let text = "";
      child.stdout.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
        for (const m of text.matchAll(/checkpointed (\d+)\n/g)) handledUpTo = Math.max(handledUpTo, Number(m[1]));
        text = text.slice(text.lastIndexOf("\n") + 1);
        if (handledUpTo >= 20 * BATCH - 1 && child.exitCode === null) child.kill("SIGKILL");
      });
      child.on("exit", () => done());
      child.on("error", failed);
    });
    expect(child.signalCode).toBe("SIGKILL");
    expect(handledUpTo).toBeGreaterThanOrEqual(20 * BATCH - 1);
    expect(handledUpTo).toBeLessThan(STREAM - 1);

    const db = openDatabase({ dataDir: dir, migrations: engineMigrations });
    // Every batch handed back is in the table: each thing at least at its last offset among them.
    const after = new Map(rows(db).map((r) => [r.thing_name, r]));
    for (let thing = 0; thing < THINGS; thing++) {
      const lastHanded = handledUpTo - ((handledUpTo - thing) % THINGS);
      expect(after.get(`t${thing}`)!.last_offset).toBeGreaterThanOrEqual(lastHanded);
    }

    // Kafka hands over again from the offset it committed (after the last checkpointed batch): nothing
    // counts twice, and every trigger of a run without a crash is in the outbox, from before or after.
    const observations = openObservations({ dataDir: dir, db, writerThread: false });
    expect(await observations.store.count()).toBeGreaterThanOrEqual(handledUpTo + 1);
    const state = new SqliteStateStore(db);
    const sink = new CollectingSink();
    const engine = new RuleEngine({ resolveThing, state, sink, observations: observations.store });
    engine.load([hotTwice]);
    for (let start = handledUpTo + 1; start < STREAM; start += BATCH)
      await engine.handle(decodeMessages(messages(start, start + BATCH)));
    await engine.close();
    const final = rows(db);
    expect(final).toHaveLength(THINGS);
    for (const r of final) expect(r.seq).toBe(STREAM / THINGS);
    expect(await observations.store.count()).toBe(STREAM);

    const reference = new RuleEngine({ resolveThing, state: new MemoryStateStore(), sink: new CollectingSink() });
    reference.load([hotTwice]);
    const expected = reference.process(decodeMessages(messages(0, STREAM))).actions.map((a) => a.idempotencyKey);
    expect(expected.length).toBeGreaterThan(100);
    const made = new Set([
      ...readFileSync(join(dir, "outbox"), "utf8").split("\n").filter(Boolean),
      ...sink.actions.map((a) => a.idempotencyKey),
    ]);
    expect([...made].sort()).toEqual([...new Set(expected)].sort());
    await observations.close();
    db.close();
  }, 120_000);
});
