import Database from "better-sqlite3";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeValue,
  MemoryStateStore,
  RuleEngine,
  SqliteStateStore,
  stateMigrations,
  type ThingInfo,
  type ThingState,
} from "../../src/engine/index.js";
import { ObservationColumnsBuilder, stateText } from "../../src/observations/index.js";
import { migrate } from "../../src/store/index.js";
import { testRule } from "./support.js";

const RESOURCES = ["a", "b", "c", "d"] as const;
const things: ThingInfo[] = ["t1", "t2", "t3"].map((thingName) => ({
  thingName,
  thingType: "10",
  domain: "acme",
  domains: new Set(["acme"]),
  checks: new Map(),
}));
const resolveThing = (name: string): ThingInfo | undefined => things.find((t) => t.thingName === name);

/** A state store that keeps what each checkpoint handed it: the states as JSON then, and the text the engine had. */
class RecordingStore extends MemoryStateStore {
  readonly rows: { name: string; json: string; given: string | undefined }[] = [];
  override flush(changed: readonly ThingState[], stateJson?: readonly (string | undefined)[]): void {
    changed.forEach((t, i) =>
      this.rows.push({ name: t.thingName, json: JSON.stringify(t.state), given: stateJson?.[i] }),
    );
    super.flush(changed);
  }
}

function engineOn(state: MemoryStateStore): RuleEngine {
  const engine = new RuleEngine({
    resolveThing,
    state,
    sink: { accept: async () => {} },
    observations: { insertColumns: () => undefined },
    clock: () => 1_000,
    checkpointMs: Infinity,
  });
  engine.load([testRule("r", [{ operator: "gt", resource: "a", value: 5 }], { threshold: { count: 2, interval: 0 } })]);
  return engine;
}

const observation = fc.record({
  thing: fc.constantFrom("t1", "t2", "t3"),
  // Any resources, in any order: full reports, partial ones, and the same keys in another order.
  state: fc
    .uniqueArray(fc.constantFrom(...RESOURCES), { minLength: 1, maxLength: RESOURCES.length })
    .chain((keys) =>
      fc
        .tuple(...keys.map(() => fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constantFrom("x", "y"))))
        .map((values) => Object.fromEntries(keys.map((k, i) => [k, values[i]]))),
    ),
  nested: fc.option(fc.constant([{ type: "wheel", id: "1", state: { p: 2 } }]), { nil: undefined, freq: 8 }),
  checkpointAfter: fc.boolean(),
});

describe("the state's text a checkpoint takes from the stored observation", () => {
  it("is the state's JSON inside the document, whatever the thing's name, type and domain hold", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.string(),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        fc.dictionary(fc.string(), fc.jsonValue()),
        (thingName, thingType, domain, timestamp, state) => {
          const rows = new ObservationColumnsBuilder();
          const doc = rows.addObservation(thingName, thingType, domain, timestamp, state, undefined, -1, 0);
          expect(stateText(doc)).toBe(JSON.stringify(state));
        },
      ),
    );
  });

  it("is handed to the store for a thing whose last observation carried its whole state, and is that state's JSON", async () => {
    const store = new RecordingStore();
    const engine = engineOn(store);
    const batch = (state: Record<string, unknown>, thingName = "t1") =>
      engine.process([decodeValue({ thingName, timestamp: 1, state }, { source: "test" })]);
    batch({ a: 1, b: "x" });
    await engine.checkpoint();
    // A report of part of the state: the state is more than the observation.
    batch({ a: 7 });
    await engine.checkpoint();
    // All of it again.
    batch({ a: 8, b: "y" });
    await engine.checkpoint();
    expect(store.rows).toEqual([
      { name: "t1", json: '{"a":1,"b":"x"}', given: '{"a":1,"b":"x"}' },
      { name: "t1", json: '{"a":7,"b":"x"}', given: undefined },
      { name: "t1", json: '{"a":8,"b":"y"}', given: '{"a":8,"b":"y"}' },
    ]);
  });

  it("always equals the state the engine holds, over random reports, batches and checkpoints; the table reads it back", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(observation, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }),
        async (batches) => {
          const store = new RecordingStore();
          const engine = engineOn(store);
          const db = new Database(":memory:");
          migrate(db, stateMigrations);
          const table = new SqliteStateStore(db);
          const durable = engineOn(table);
          let offset = 0;
          for (const batch of batches) {
            const items = batch.map((o) =>
              decodeValue(
                { thingName: o.thing, timestamp: offset, state: o.state, ...(o.nested ? { nested: o.nested } : {}) },
                { source: "kafka:obs", partition: 0, offset: String(offset++) },
              ),
            );
            engine.process(items);
            durable.process(items);
            if (batch[batch.length - 1]!.checkpointAfter) {
              await engine.checkpoint();
              await durable.checkpoint();
            }
          }
          await engine.checkpoint();
          await durable.checkpoint();
          for (const row of store.rows)
            if (row.given !== undefined) expect(JSON.parse(row.given)).toEqual(JSON.parse(row.json));
          // What a restart reads is the state in memory, key for key.
          const reread = new SqliteStateStore(db);
          for (const { thingName } of things) {
            const held = durable.thingState(thingName);
            if (held === undefined) continue;
            expect(reread.thing(thingName)?.state).toEqual(held.state);
            expect(reread.thing(thingName)?.nested).toEqual(held.nested);
          }
          db.close();
        },
      ),
      { numRuns: 200 },
    );
  });
});
