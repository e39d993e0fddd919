import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decodeMessages, engineMigrations, RuleEngine, SqliteStateStore } from "../../src/engine/index.js";
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
  it("a batch is handed back only once its state is in the table", async () => {
    const { engine, other, release, close } = lockedWriter();
    let handled = false;
    const handling = engine.handle(decodeMessages(messages(0, 3))).then((result) => {
      handled = true;
      return result;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(handled).toBe(false);
    expect(rows(other)).toEqual([]);
    release();
    expect((await handling).accepted).toBe(3);
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
    await new Promise((r) => setTimeout(r, 200));
    release();
    await Promise.all(handled);
    const written = rows(other);
    expect(written).toHaveLength(THINGS);
    for (const r of written) {
      const thing = Number(r.thing_name.slice(1));
      expect(r).toEqual({ thing_name: r.thing_name, seq: 5, last_offset: 4 * THINGS + thing });
    }
    await close();
  });

  it("a state write that failed rejects its batch, and the engine goes back to the table before the next", async () => {
    const dir = dataDir();
    const db = openDatabase({ dataDir: dir, migrations: engineMigrations });
    const state = new SqliteStateStore(db, { writerThread: true });
    const engine = new RuleEngine({ resolveThing, state, sink: new CollectingSink() });
    await engine.handle(decodeMessages(messages(0, 1)));
    // The thread cannot write: the table is gone under it.
    db.exec("ALTER TABLE engine_thing_state RENAME TO kept");
    await expect(engine.handle(decodeMessages(messages(THINGS, THINGS + 1)))).rejects.toThrow(/engine_thing_state/);
    db.exec("ALTER TABLE kept RENAME TO engine_thing_state");
    // Handed over again, the batch is evaluated afresh on the durable state: t0 counted once more, not twice.
    await engine.handle(decodeMessages(messages(THINGS, THINGS + 1)));
    expect(engine.thingState("t0")).toMatchObject({ seq: 2, lastOffset: THINGS });
    expect(rows(db)).toEqual([{ thing_name: "t0", seq: 2, last_offset: THINGS }]);
    await state.close();
    db.close();
  });
});

/** Batches the crashing engine is handed, and their size. */
const BATCH = 200;
const STREAM = 200 * BATCH;

/**
 * The engine as the service runs it (state and observations each written by a thread of
 * their own), fed as the Kafka source feeds it: three batches in flight, the last offset of
 * each batch printed once the batch is handed back (what the source would commit).
 */
function crashingEngineScript(dir: string): string {
  const src = (path: string): string => JSON.stringify(resolve(path));
  return `
import { decodeMessages, engineMigrations, RuleEngine, SqliteStateStore } from ${src("src/engine/index.ts")};
import { openObservations } from ${src("src/observations/index.ts")};
import { openDatabase } from ${src("src/store/index.ts")};
import { messages, resolveThing } from ${src("test/engine/stream.ts")};
const db = openDatabase({ dataDir: ${JSON.stringify(dir)}, migrations: engineMigrations });
const observations = openObservations({ dataDir: ${JSON.stringify(dir)}, db, writerThread: true });
const engine = new RuleEngine({
  resolveThing,
  state: new SqliteStateStore(db, { writerThread: true }),
  sink: { accept: async () => {} },
  observations: observations.store,
});
const inFlight = [];
for (let start = 0; start < ${STREAM}; start += ${BATCH}) {
  const last = start + ${BATCH} - 1;
  inFlight.push(engine.handle(decodeMessages(messages(start, last + 1))).then(() => last));
  if (inFlight.length >= 3) console.log("handled " + (await inFlight.shift()));
  // A stream's pace, so that the test's kill comes while batches are under way.
  await new Promise((r) => setTimeout(r, 5));
}
`;
}

describe("kill -9 of the engine process", () => {
  it("loses no batch it handed back, and a replay from the start counts every observation once", async () => {
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
        for (const m of text.matchAll(/handled (\d+)\n/g)) handledUpTo = Math.max(handledUpTo, Number(m[1]));
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

    // Kafka hands over again from wherever it committed, at worst from the start: nothing counts twice.
    const observations = openObservations({ dataDir: dir, db, writerThread: false });
    expect(await observations.store.count()).toBeGreaterThanOrEqual(handledUpTo + 1);
    const state = new SqliteStateStore(db);
    const engine = new RuleEngine({
      resolveThing,
      state,
      sink: new CollectingSink(),
      observations: observations.store,
    });
    for (let start = 0; start < STREAM; start += BATCH)
      await engine.handle(decodeMessages(messages(start, start + BATCH)));
    const final = rows(db);
    expect(final).toHaveLength(THINGS);
    for (const r of final) expect(r.seq).toBe(STREAM / THINGS);
    expect(await observations.store.count()).toBe(STREAM);
    await observations.close();
    db.close();
  }, 120_000);
});
