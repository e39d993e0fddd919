import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { TriggeredAction } from "../../src/actions/index.js";
import { decodeMessages, MemoryStateStore, RuleEngine, type RawObservation } from "../../src/engine/index.js";
import { thingResolver, workload } from "../../bench/engine/workload.js";

/** 4 observations per thing: counts of 3 consecutive matches are reached, and go on past them. */
const OBSERVATIONS = 400_000;
const CHUNK = 5_000;

/**
 * The bench/engine workload end to end, against figures recorded before the engine's evaluation was
 * reworked for speed: the same actions (idempotency keys and payloads, in order), the same matches and
 * the same thing states (resources, sequence numbers, live thresholds) after every observation.
 */
describe("bench/engine workload", () => {
  it("triggers, matches and leaves the states it always has", () => {
    const w = workload();
    const engine = new RuleEngine({
      resolveThing: thingResolver(w.things),
      state: new MemoryStateStore(),
      sink: { accept: async (_: readonly TriggeredAction[]): Promise<void> => {} },
      clock: () => 1_763_000_000_000,
    });
    expect(engine.load(w.rules)).toEqual([]);
    const actions = createHash("sha256");
    let triggered = 0;
    let matched = 0;
    let accepted = 0;
    for (let start = 0; start < OBSERVATIONS; start += CHUNK) {
      const chunk: RawObservation[] = [];
      for (let i = start; i < start + CHUNK; i++)
        chunk.push({
          key: null,
          value: Buffer.from(w.message(i)),
          position: { source: "kafka:bench", partition: 0, offset: String(i) },
        });
      const work = engine.process(decodeMessages(chunk));
      triggered += work.triggered;
      matched += work.matched;
      accepted += work.accepted;
      for (const a of work.actions) actions.update(`${a.idempotencyKey}\n${JSON.stringify(a)}\n`);
    }
    const states = createHash("sha256");
    for (const { thingName } of w.things) {
      const st = engine.thingState(thingName);
      if (st === undefined) continue;
      const live = (st.thresholds ?? [])
        .filter((e) => e.count > 0 || e.lastFiredAt !== 0)
        .map((e) => [e.ruleId, e.count, e.lastFiredAt, e.lastSeq ?? null, e.version ?? null] as const)
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      states.update(
        `${JSON.stringify([thingName, st.timestamp, st.seq, st.lastSource, st.lastOffset, st.state, st.nested ?? null, live])}\n`,
      );
    }
    expect({
      accepted,
      triggered,
      matched,
      actions: actions.digest("hex"),
      states: states.digest("hex"),
    }).toEqual({
      accepted: OBSERVATIONS,
      triggered: 174,
      matched: 714_940,
      actions: "935cd807eac972c79c4419ba5427f4b9f84eaaf12eb3f75b1da22153a9cc7f00",
      states: "1783e363ba86645f1a451fa7f91241aeb5c7f8bc584d03fe505e76b17e3bd866",
    });
  });
});
