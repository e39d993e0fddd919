import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  decodeMessages,
  decodeValue,
  engineMigrations,
  type Ingested,
  MemoryStateStore,
  resourceChecks,
  RuleEngine,
  RewoundError,
  SqliteStateStore,
  type RawObservation,
  type StateStore,
  type ThingState,
  type ThingInfo,
} from "../../src/engine/index.js";
import type { ExpressionItem, Rule } from "../../src/rules/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { CollectingSink, testRule } from "./support.js";

const checks = resourceChecks([
  { name: "temp", dataType: "long", resourceType: "thing" },
  { name: "latlng", dataType: "geo_point", resourceType: "thing" },
  { name: "status", dataType: "string", resourceType: "thing" },
]);
const THINGS: Record<string, ThingInfo> = {
  t1: { thingName: "t1", thingType: "10", domain: "acme", domains: new Set(["root", "acme"]), checks },
  t2: { thingName: "t2", thingType: "10", domain: "acme", domains: new Set(["root", "acme"]), checks },
  o1: { thingName: "o1", thingType: "10", domain: "other", domains: new Set(["root", "other"]), checks },
};

function makeRule(
  id: string,
  expression: ExpressionItem[],
  threshold = { count: 1, interval: 0 },
  extra: Partial<Rule> = {},
): Rule {
  return testRule(id, expression, { name: `rule ${id}`, threshold, ...extra });
}

let seq = 0;
/** A Kafka message of the thing, decoded as the Kafka source's batches are. */
function obs(thingName: string, state: Record<string, unknown>, extra: Record<string, unknown> = {}): Ingested {
  seq++;
  return kafka(JSON.stringify({ thingName, timestamp: 1_763_000_000_000 + seq, state, ...extra }), thingName);
}

function kafka(text: string | Buffer, key: string | null = null): Ingested {
  const raw: RawObservation = {
    key,
    value: typeof text === "string" ? Buffer.from(text) : text,
    position: { source: "kafka:test", partition: 0, offset: String(++seq) },
  };
  return decodeMessages([raw])[0]!;
}

/** An item of `POST /observations`, decoded as the route does. */
const http = (value: unknown): Ingested => decodeValue(value, { source: "http" });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(options: { state?: StateStore; now?: { t: number } } = {}) {
  const sink = new CollectingSink();
  const now = options.now ?? { t: 1_000_000 };
  const engine = new RuleEngine({
    resolveThing: (name) => THINGS[name],
    state: options.state ?? new MemoryStateStore(),
    sink,
    clock: () => now.t,
  });
  return { engine, sink, now };
}

const hot = { operator: "gt" as const, resource: "temp", value: 30 };
/** A 1 x 1 degree polygon, [lon, lat]. */
const square: [number, number][] = [
  [10, 59],
  [11, 59],
  [11, 60],
  [10, 60],
];

describe("thresholds", () => {
  it("actions run when count consecutive observations match; the counter then restarts", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("r", [hot], { count: 3, interval: 0 })]);
    for (const t of [31, 32]) await engine.handle([obs("t1", { temp: t })]);
    expect(sink.actions).toHaveLength(0);
    await engine.handle([obs("t1", { temp: 33 })]);
    expect(sink.actions).toHaveLength(1);
    for (const t of [34, 35]) await engine.handle([obs("t1", { temp: t })]);
    expect(sink.actions).toHaveLength(1);
    await engine.handle([obs("t1", { temp: 36 })]);
    expect(sink.actions).toHaveLength(2);
  });

  it("a non-matching observation resets the count", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("r", [hot], { count: 2, interval: 0 })]);
    await engine.handle([obs("t1", { temp: 31 }), obs("t1", { temp: 20 }), obs("t1", { temp: 31 })]);
    expect(sink.actions).toHaveLength(0);
    await engine.handle([obs("t1", { temp: 31 })]);
    expect(sink.actions).toHaveLength(1);
  });

  // Devices report partial state: an observation carrying none of a rule's resources neither matches nor resets it.
  describe("partial observations", () => {
    const warm = { operator: "gte" as const, resource: "temp", value: 80 };

    it("an observation without the rule's resources neither matches nor resets its count", async () => {
      const { engine, sink } = setup();
      engine.load([makeRule("r", [warm], { count: 3, interval: 0 })]);
      // temp every minute, battery in between: the tracker of docs/engine.md, "Partial observations".
      for (const state of [{ temp: 85 }, { battery: 50 }, { temp: 86 }, { battery: 49 }, { battery: 48 }]) {
        await engine.handle([obs("t1", state)]);
      }
      expect(sink.actions).toHaveLength(0);
      await engine.handle([obs("t1", { temp: 87 })]);
      expect(sink.actions).toHaveLength(1);
      expect(sink.actions[0]!.payload.observation.state).toEqual({ temp: 87 });
    });

    it("in one batch too, and a thing's unconcerned observations do not touch another thing's count", async () => {
      const { engine, sink } = setup();
      engine.load([makeRule("r", [warm], { count: 2, interval: 0 })]);
      await engine.handle([
        obs("t1", { temp: 90 }),
        obs("t2", { temp: 90 }),
        obs("t1", { battery: 10 }),
        obs("t2", { temp: 10 }),
        obs("t1", { temp: 91 }),
        obs("t2", { temp: 91 }),
      ]);
      expect(sink.actions.map((a) => a.thingName)).toEqual(["t1"]);
    });

    it("an observation carrying the resource and not matching still resets", async () => {
      const { engine, sink } = setup();
      engine.load([makeRule("r", [warm], { count: 2, interval: 0 })]);
      await engine.handle([obs("t1", { temp: 90 }), obs("t1", { battery: 1 }), obs("t1", { temp: 20, battery: 1 })]);
      await engine.handle([obs("t1", { temp: 90 })]);
      expect(sink.actions).toHaveLength(0);
      // A resource reported as null is reported (cleared): it concerns the rule and resets it.
      await engine.handle([obs("t1", { temp: null }), obs("t1", { temp: 90 })]);
      expect(sink.actions).toHaveLength(0);
      await engine.handle([obs("t1", { temp: 90 })]);
      expect(sink.actions).toHaveLength(1);
    });

    it("a rule of two resources is concerned by either; a geofence by latlng; a nested item by its type's resource", async () => {
      const { engine, sink } = setup();
      engine.load([
        makeRule("both", [warm, { operator: "gt", resource: "hum", value: 50 }], { count: 2, interval: 0 }),
        makeRule("fence", [{ operator: "inside", resource: "latlng", value: square }], { count: 2, interval: 0 }),
        makeRule("door", [{ operator: "eq", resource: "door.open", value: 1 }], { count: 2, interval: 0 }),
      ]);
      const fired = (): string[] => sink.actions.map((a) => a.ruleId);
      await engine.handle([
        obs("t1", { temp: 90, hum: 60, latlng: "59.5,10.5" }, { nested: [{ type: "door", state: { open: 1 } }] }),
      ]);
      // Only hum: concerns "both" (and does not match it, temp missing): reset. Not the fence, not the door.
      await engine.handle([obs("t1", { hum: 60 })]);
      // A door object without `open`, and another nested type: the door rule is not concerned.
      await engine.handle([
        obs(
          "t1",
          { battery: 3 },
          {
            nested: [
              { type: "door", state: { locked: 1 } },
              { type: "window", state: { open: 1 } },
            ],
          },
        ),
      ]);
      await engine.handle([
        obs("t1", { temp: 90, hum: 60, latlng: "59.6,10.6" }, { nested: [{ type: "door", state: { open: 1 } }] }),
      ]);
      expect(fired().sort()).toEqual(["door", "fence"]);
    });

    it("a count carried over unconcerned observations survives a restart", async () => {
      const dir = mkdtempSync(join(tmpdir(), "dms-engine-"));
      dirs.push(dir);
      const rule = makeRule("r", [warm], { count: 3, interval: 0 });
      const first = openDatabase({ dataDir: dir, migrations: engineMigrations });
      const a = setup({ state: new SqliteStateStore(first) });
      a.engine.load([rule]);
      await a.engine.handle([obs("t1", { temp: 85 }), obs("t1", { battery: 50 }), obs("t1", { temp: 85 })]);
      // The last checkpoint of a stop.
      await a.engine.close();
      first.close();
      const second = openDatabase({ dataDir: dir, migrations: engineMigrations });
      const b = setup({ state: new SqliteStateStore(second) });
      b.engine.load([rule]);
      await b.engine.handle([obs("t1", { battery: 49 })]);
      expect(b.sink.actions).toHaveLength(0);
      await b.engine.handle([obs("t1", { temp: 85 })]);
      expect(b.sink.actions).toHaveLength(1);
      second.close();
    });
  });

  it("counts per thing", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("r", [hot], { count: 2, interval: 0 })]);
    await engine.handle([obs("t1", { temp: 31 }), obs("t2", { temp: 31 }), obs("t1", { temp: 31 })]);
    expect(sink.actions.map((a) => a.thingName)).toEqual(["t1"]);
  });

  it("waits interval seconds (engine clock) between two runs for one thing", async () => {
    const { engine, sink, now } = setup();
    engine.load([makeRule("r", [hot], { count: 1, interval: 60 })]);
    await engine.handle([obs("t1", { temp: 31 })]);
    now.t += 59_999;
    await engine.handle([obs("t1", { temp: 31 })]);
    expect(sink.actions).toHaveLength(1);
    now.t += 1;
    await engine.handle([obs("t1", { temp: 31 })]);
    expect(sink.actions).toHaveLength(2);
  });

  it("hands over the payload and the raw action config with the idempotency key", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("r", [hot], { count: 1, interval: 0 }, { category: "heat" })]);
    const raw = obs("t1", { temp: 31 });
    await engine.handle([raw]);
    const [a] = sink.actions;
    expect(a!.idempotencyKey).toBe(`r:t1:kafka:test:0:${raw.position.offset}:0`);
    expect(a!.config).toEqual({ classification: "ALARM", message: "hot" });
    expect(a!.payload.rule).toEqual({ id: "r", name: "rule r", domain: "acme", category: "heat" });
    expect(a!.payload.thing).toMatchObject({ thingName: "t1", thingType: "10", domain: "acme", state: { temp: 31 } });
    expect(a!.payload.observation).toMatchObject({ id: `kafka:test:0:${raw.position.offset}`, state: { temp: 31 } });
  });

  it("a rule applies to things of its domain and below only, and to its thingNames only", async () => {
    const { engine, sink } = setup();
    engine.load([
      makeRule("all", [hot]),
      makeRule("named", [hot], undefined, { filter: { domain: "acme", thingType: "10", thingNames: ["t2"] } }),
    ]);
    await engine.handle([obs("o1", { temp: 40 }), obs("t1", { temp: 40 }), obs("t2", { temp: 40 })]);
    expect(sink.actions.map((a) => `${a.ruleId}/${a.thingName}`).sort()).toEqual(["all/t1", "all/t2", "named/t2"]);
  });
});

describe("thing state", () => {
  it("thing.state is the state before this observation", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("rise", [{ operator: "gt", resource: "temp", value: "${thing.state.temp + 5}" }])]);
    await engine.handle([
      obs("t1", { temp: 10 }),
      obs("t1", { temp: 14 }),
      obs("t1", { status: "x" }),
      obs("t1", { temp: 20 }),
    ]);
    expect(sink.actions).toHaveLength(1);
    expect(engine.thingState("t1")!.state).toEqual({ temp: 20, status: "x" });
  });

  it("enter and leave follow the thing's positions across observations", async () => {
    const { engine, sink } = setup();
    engine.load([
      makeRule("enter", [{ operator: "enter", resource: "latlng", value: square }]),
      makeRule("leave", [{ operator: "leave", resource: "latlng", value: square }]),
    ]);
    const path = ["58,10.5", "59.5,10.5", "59.6,10.5", { lat: 61, lon: 10.5 }, [10.5, 59.5]];
    for (const latlng of path) await engine.handle([obs("t1", { latlng })]);
    await engine.handle([obs("t1", { temp: 1 })]);
    expect(sink.actions.map((a) => a.ruleId)).toEqual(["enter", "leave", "enter"]);
  });

  it("nested objects are kept by type and id; an item without id applies to every object of its type", async () => {
    const { engine } = setup();
    await engine.handle([
      obs(
        "t1",
        {},
        {
          nested: [
            { type: "door", id: "front", state: { open: 0 } },
            { type: "door", id: "back", state: { open: 1 } },
          ],
        },
      ),
    ]);
    await engine.handle([obs("t1", {}, { nested: [{ type: "door", state: { locked: 1 } }, { state: { level: 3 } }] })]);
    expect(engine.thingState("t1")!.nested).toEqual([
      { type: "door", id: "front", state: { open: 0, locked: 1 } },
      { type: "door", id: "back", state: { open: 1, locked: 1 } },
      { state: { level: 3 } },
    ]);
  });
});

describe("geofence rules found through the spatial grid", () => {
  it("inside and insidePoi match at edges and centres; a box too large for the grid is scanned", async () => {
    const { engine, sink } = setup();
    const huge: [number, number][] = [
      [-100, -80],
      [100, -80],
      [100, 80],
      [-100, 80],
    ];
    engine.load([
      makeRule("square", [{ operator: "inside", resource: "latlng", value: square }]),
      makeRule("poi", [
        { operator: "insidePoi", resource: "latlng", value: { center: { lat: "59.5", lon: "10.5" }, radius: 100 } },
      ]),
      makeRule("huge", [{ operator: "inside", resource: "latlng", value: huge }]),
      makeRule("outside", [{ operator: "outside", resource: "latlng", value: square }]),
    ]);
    const fired = async (latlng: unknown): Promise<string[]> => {
      const before = sink.actions.length;
      await engine.handle([obs("t1", { latlng })]);
      return sink.actions
        .slice(before)
        .map((a) => a.ruleId)
        .sort();
    };
    expect(await fired("60,11")).toEqual(["huge", "square"]);
    expect(await fired("59,10")).toEqual(["huge", "square"]);
    expect(await fired("59.5,10.5")).toEqual(["huge", "poi", "square"]);
    expect(await fired("59.5,11.0001")).toEqual(["huge", "outside"]);
    expect(await fired("0,0")).toEqual(["huge", "outside"]);
    expect(await fired("60,150")).toEqual(["outside"]);
  });
});

describe("hot reload", () => {
  it("a created, updated, disabled and removed rule takes effect at once, keeping other rules' counts", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("keep", [hot], { count: 2, interval: 0 })]);
    await engine.handle([obs("t1", { temp: 31 })]);
    engine.apply("new", makeRule("new", [{ operator: "lt", resource: "temp", value: 0 }]));
    await engine.handle([obs("t1", { temp: 32 })]);
    expect(sink.actions.map((a) => a.ruleId)).toEqual(["keep"]);
    await engine.handle([obs("t1", { temp: -1 })]);
    expect(sink.actions.map((a) => a.ruleId)).toEqual(["keep", "new"]);
    engine.apply("new", { ...makeRule("new", [{ operator: "lt", resource: "temp", value: 0 }]), enabled: false });
    await engine.handle([obs("t1", { temp: -1 })]);
    expect(sink.actions).toHaveLength(2);
    engine.apply("new", makeRule("new", [{ operator: "lt", resource: "temp", value: 5 }]));
    await engine.handle([obs("t1", { temp: 1 })]);
    expect(sink.actions).toHaveLength(3);
    engine.apply("new", null);
    await engine.handle([obs("t1", { temp: 1 })]);
    expect(sink.actions).toHaveLength(3);
    expect(engine.ruleCount).toBe(1);
  });
});

describe("a live count across rule changes and quiet observations", () => {
  it("a rule renamed mid-count keeps counting under its new compilation; a thing that matched nothing keeps none", async () => {
    const { engine, sink } = setup();
    const temp = { operator: "gt" as const, resource: "temp", value: 30 };
    engine.load([makeRule("r", [temp], { count: 3, interval: 0 })]);
    await engine.handle([obs("t1", { temp: 31 }), obs("t2", { temp: 10 })]);
    // Same conditions: the count goes on; the entry's compiled rule is the replaced one, and its
    // concern test (battery is not the rule's resource) must come from the current one.
    engine.apply("r", makeRule("r", [temp], { count: 3, interval: 0 }, { name: "renamed" }));
    await engine.handle([obs("t1", { battery: 50 }), obs("t1", { temp: 32 }), obs("t2", { temp: 11 })]);
    expect(sink.actions).toHaveLength(0);
    expect(engine.thingState("t1")!.thresholds).toEqual([expect.objectContaining({ ruleId: "r", count: 2 })]);
    expect(engine.thingState("t2")!.thresholds).toBeUndefined();
    await engine.handle([obs("t1", { temp: 33 }), obs("t2", { temp: 31 }), obs("t2", { temp: 12 })]);
    expect(sink.actions.map((a) => [a.thingName, a.payload.rule.name])).toEqual([["t1", "renamed"]]);
    expect(engine.thingState("t2")!.thresholds).toEqual([expect.objectContaining({ ruleId: "r", count: 0 })]);
    // Removed while t1 has an entry: a quiet observation then finds no rule, as with no cache.
    await engine.handle([obs("t1", { temp: 34 })]);
    engine.apply("r", null);
    await engine.handle([obs("t1", { battery: 1 })]);
    expect(engine.thingState("t1")!.thresholds!.every((e) => e.count === 0)).toBe(true);
  });
});

describe("bad messages go to dead letters; the ones around them are evaluated", () => {
  it("reports each reason", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("r", [hot])]);
    const good = obs("t1", { temp: 31 });
    const batch: Ingested[] = [
      kafka(Buffer.from([0xff, 0x00, 0x13])),
      kafka("{not json"),
      kafka("[1,2]"),
      http({ thingName: "nobody", timestamp: 1, state: {} }),
      http({ thingName: "t1", state: {} }),
      http({ thingName: "t1", timestamp: "yesterday", state: {} }),
      http({ thingName: "t1", timestamp: 1, state: { temp: "hot" } }),
      http({ thingName: "t1", timestamp: 1, state: { latlng: "north" } }),
      http({ timestamp: 1, state: {} }),
      kafka('{"thingName":"t1","timestamp":1,"state":{"__proto__":{"temp":99}}}'),
      good,
    ];
    const result = await engine.handle(batch);
    expect(result.rejected.map((r) => [r.index, r.reason])).toEqual([
      [0, "not-json"],
      [1, "not-json"],
      [2, "invalid-observation"],
      [3, "unknown-thing"],
      [4, "missing-timestamp"],
      [5, "bad-timestamp"],
      [6, "wrong-type"],
      [7, "wrong-type"],
      [8, "missing-thing-name"],
      [9, "invalid-observation"],
    ]);
    expect(result.accepted).toBe(1);
    expect(sink.actions).toHaveLength(1);
  });

  it("accepts ISO 8601 timestamps and the Kafka key as thingName", async () => {
    const { engine } = setup();
    const result = await engine.handle([kafka('{"timestamp":"2025-11-13T02:13:20.000Z","state":{"temp":1}}', "t1")]);
    expect(result.accepted).toBe(1);
    expect(engine.thingState("t1")!.timestamp).toBe(Date.parse("2025-11-13T02:13:20.000Z"));
  });
});

describe("persistence", () => {
  function db(dir: string): Db {
    return openDatabase({ dataDir: dir, migrations: engineMigrations });
  }

  it("a restart in the middle of a threshold count resumes it, and the interval is not fired early", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-engine-"));
    dirs.push(dir);
    const now = { t: 5_000_000 };
    const rules = [makeRule("r", [hot], { count: 3, interval: 3600 })];
    const first = db(dir);
    let run = setup({ state: new SqliteStateStore(first), now });
    run.engine.load(rules);
    await run.engine.handle([obs("t1", { temp: 31 }), obs("t1", { temp: 31 }), obs("t1", { temp: 31 })]);
    expect(run.sink.actions).toHaveLength(1);
    await run.engine.handle([obs("t1", { temp: 31 }), obs("t1", { temp: 31 })]);
    await run.engine.close();
    first.close();

    const second = db(dir);
    run = setup({ state: new SqliteStateStore(second), now });
    run.engine.load(rules);
    await run.engine.handle([obs("t1", { temp: 31 })]);
    expect(run.sink.actions).toHaveLength(0);
    now.t += 3600_000;
    await run.engine.handle([obs("t1", { temp: 31 })]);
    expect(run.sink.actions).toHaveLength(1);
    await run.engine.close();
    second.close();

    const third = db(dir);
    run = setup({ state: new SqliteStateStore(third), now });
    run.engine.load(rules);
    expect(run.engine.thingState("t1")!.state).toEqual({ temp: 31 });
    third.close();
  });

  it("a batch whose actions the sink refused is evaluated afresh when it comes again, not skipped as a replay", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-engine-"));
    dirs.push(dir);
    const store = db(dir);
    let refuse = true;
    const accepted: string[] = [];
    const engine = new RuleEngine({
      resolveThing: (name) => THINGS[name],
      state: new SqliteStateStore(store),
      sink: {
        accept: async (actions) => {
          if (refuse) throw new Error("outbox unavailable");
          accepted.push(...actions.map((a) => a.idempotencyKey));
        },
      },
    });
    engine.load([makeRule("r", [hot], { count: 2, interval: 0 })]);
    const first = [obs("t1", { temp: 31 })];
    await engine.handle(first);
    const batch = [obs("t1", { temp: 32 })];
    await expect(engine.handle(batch)).rejects.toThrow("outbox unavailable");
    // The engine went back to its last checkpoint, which the first batch is not in: the source hands
    // its partition over again from the committed offset (Kafka committed neither), not from the
    // failed batch.
    refuse = false;
    await expect(engine.handle(batch)).rejects.toBeInstanceOf(RewoundError);
    await engine.handle(first);
    await engine.handle(batch);
    expect(accepted).toHaveLength(1);
    expect(engine.thingState("t1")!.seq).toBe(2);
    // Counted once: the next match starts a new count rather than firing again.
    await engine.handle([obs("t1", { temp: 33 })]);
    expect(accepted).toHaveLength(1);
    store.close();
  });

  it("after a rewind a batch fetched after the source went back is evaluated even when offsets were skipped; one from before is refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-engine-"));
    dirs.push(dir);
    const store = db(dir);
    let refuse = false;
    const engine = new RuleEngine({
      resolveThing: (name) => THINGS[name],
      state: new SqliteStateStore(store),
      sink: {
        accept: async () => {
          if (refuse) throw new Error("outbox unavailable");
        },
      },
    });
    engine.load([makeRule("r", [hot], { count: 2, interval: 0 })]);
    const at = (offset: number, epoch: number, temp: number): Ingested =>
      decodeMessages([
        {
          key: "t1",
          value: Buffer.from(
            JSON.stringify({ thingName: "t1", timestamp: 1_763_000_000_000 + offset, state: { temp } }),
          ),
          position: { source: "kafka:gaps", partition: 0, offset: String(offset), epoch },
        },
      ])[0]!;
    await engine.handle([at(10, 0, 31)]);
    await engine.checkpoint();
    // Everything up to 10 is durable (and committed); 11 is a transaction marker, so the next record is 12.
    refuse = true;
    await expect(engine.handle([at(12, 0, 32)])).rejects.toThrow("outbox unavailable");
    refuse = false;
    // Handed over before the source went back: it does not follow on from offset 11, so it is refused.
    await expect(engine.handle([at(13, 0, 33)])).rejects.toBeInstanceOf(RewoundError);
    // Fetched again from the committed offset 11 after going back (epoch 1): its first record is 12.
    await engine.handle([at(12, 1, 32), at(13, 1, 33)]);
    expect(engine.thingState("t1")!.seq).toBe(3);
    store.close();
  });

  it("after a resync a thing's state is read again from the table; a count made under changed conditions starts over", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-engine-"));
    dirs.push(dir);
    const [mine, theirs] = [db(dir), db(dir)];
    const rule = makeRule("r", [hot], { count: 3, interval: 0 });
    const a = setup({ state: new SqliteStateStore(mine) });
    const b = setup({ state: new SqliteStateStore(theirs) });
    a.engine.load([rule]);
    b.engine.load([rule]);
    // b owned t1 and counted 2 of 3; then t1's partition came to a.
    await b.engine.handle([obs("t1", { temp: 31 }), obs("t1", { temp: 32 })]);
    // b's checkpoint covers them (and so b committed them) before the partition moved.
    await b.engine.checkpoint();
    await a.engine.resync();
    expect(a.engine.thingState("t1")).toMatchObject({ seq: 2, state: { temp: 32 } });
    await a.engine.handle([obs("t1", { temp: 33 })]);
    expect(a.sink.actions).toHaveLength(1);

    // Back to b (a rebalance resyncs every engine), 2 of 3 again; then the rule's conditions change
    // in a while t1 sits only in the table.
    await a.engine.checkpoint();
    await b.engine.resync();
    await b.engine.handle([obs("t1", { temp: 34 }), obs("t1", { temp: 35 })]);
    await b.engine.checkpoint();
    await a.engine.resync();
    a.engine.apply("r", makeRule("r", [{ ...hot, value: 20 }], { count: 3, interval: 0 }));
    await a.engine.handle([obs("t1", { temp: 36 })]);
    expect(b.sink.actions).toHaveLength(0);
    expect(a.sink.actions).toHaveLength(1);
    await a.engine.handle([obs("t1", { temp: 37 }), obs("t1", { temp: 38 })]);
    expect(a.sink.actions).toHaveLength(2);
    mine.close();
    theirs.close();
  });

  it("a replayed Kafka observation the state already holds is not counted again", async () => {
    const { engine, sink } = setup();
    engine.load([makeRule("r", [hot], { count: 2, interval: 0 })]);
    const a = obs("t1", { temp: 31 });
    await engine.handle([a]);
    await engine.handle([a]);
    expect(sink.actions).toHaveLength(0);
    await engine.handle([obs("t1", { temp: 31 })]);
    expect(sink.actions).toHaveLength(1);
  });

  it("actions are handed to the sink before the state is made durable", async () => {
    const order: string[] = [];
    class Tracking extends MemoryStateStore {
      override flush(changed: readonly ThingState[]): void {
        order.push("flush");
        super.flush(changed);
      }
    }
    const engine = new RuleEngine({
      resolveThing: (name) => THINGS[name],
      state: new Tracking(),
      sink: { accept: async () => void order.push("accept") },
    });
    engine.load([makeRule("r", [hot])]);
    await engine.handle([obs("t1", { temp: 31 })]);
    await engine.checkpoint();
    expect(order).toEqual(["accept", "flush"]);
  });
});
