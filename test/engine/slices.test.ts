import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import {
  decodeMessages,
  MemoryStateStore,
  RuleEngine,
  type Ingested,
  type RawObservation,
} from "../../src/engine/index.js";
import { storedInput, type ObservationColumns } from "../../src/observations/index.js";
import type { Rule } from "../../src/rules/index.js";
import { freePortRange } from "../support/ports.js";
import { acmeThings, CollectingSink, hot } from "./support.js";

const resolveThing = acmeThings(["a", "b", "c"]);

/** temp > 30 three times in a row: counts that run across slices. */
const warm: Rule = { ...hot, id: "warm", name: "warm", threshold: { count: 3, interval: 0 } };

/** Where a stored row was read: its stream and offset, the same for the same input. */
const positions = (columns: ObservationColumns): string[] =>
  Array.from({ length: columns.count }, (_, i) => {
    const { from } = storedInput(columns, i);
    return `${from?.stream}:${from?.offset}`;
  });

function engine(): { engine: RuleEngine; sink: CollectingSink; stored: string[] } {
  const sink = new CollectingSink();
  const stored: string[] = [];
  const e = new RuleEngine({
    resolveThing,
    state: new MemoryStateStore(),
    sink,
    observations: {
      insertColumns: (columns) => {
        stored.push(...positions(columns));
      },
    },
    clock: () => 1_000_000,
  });
  e.load([warm]);
  return { engine: e, sink, stored };
}

/** A Kafka batch of `n` observations over things a, b, c (and an unknown one now and then), `temp` = the index mod 50. */
function bigBatch(n: number): Ingested[] {
  const raws: RawObservation[] = [];
  for (let i = 0; i < n; i++) {
    const thingName = i % 997 === 0 ? "nobody" : ["a", "b", "c"][i % 3]!;
    raws.push({
      key: null,
      value: Buffer.from(JSON.stringify({ thingName, timestamp: 1_763_000_000_000 + i, state: { temp: i % 50, i } })),
      position: { source: "kafka:slices", partition: 0, offset: String(i) },
    });
  }
  return decodeMessages(raws);
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

describe("a big batch is evaluated in slices", () => {
  const N = 60_000;

  it("a timer and an HTTP request are served while it is evaluated, between slices", async () => {
    const { engine: e } = engine();
    const batch = bigBatch(N);
    let done = false;
    /** Thing a's `i` when the request was served: how far the batch had got. */
    let servedAt: number | undefined;
    let servedBeforeDone: boolean | undefined;
    const { first: port } = await freePortRange(1);
    server = createServer((_req, res) => {
      servedAt = e.thingState("a")?.state.i as number | undefined;
      servedBeforeDone = !done;
      res.end("ok");
    });
    await new Promise<void>((resolve) => server!.listen(port, "127.0.0.1", resolve));

    let timerAt: number | undefined;
    setTimeout(() => (timerAt = e.thingState("a")?.state.i as number | undefined), 1);
    const response = fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.text());
    const handled = e.handle(batch).then((result) => {
      done = true;
      return result;
    });
    const [body, result] = await Promise.all([response, handled]);

    expect(body).toBe("ok");
    expect(result.accepted).toBe(N - Math.ceil(N / 997));
    // Both ran after the batch began and before its last observation was evaluated.
    expect(servedBeforeDone).toBe(true);
    expect(servedAt).toBeGreaterThan(0);
    expect(servedAt).toBeLessThan(N - 3);
    expect(timerAt).toBeGreaterThan(0);
    expect(timerAt).toBeLessThan(N - 3);
  });

  it("gives the same result as evaluating it at once: actions, stored order, dead letters, changed states", async () => {
    const whole = engine();
    const sliced = engine();
    const batch = bigBatch(N);
    const at = whole.engine.process(batch);
    const result = await sliced.engine.handle(batch);

    expect(result.triggered).toBe(at.triggered);
    expect(result.matched).toBe(at.matched);
    expect(result.rejected).toEqual(at.rejected);
    expect(at.triggered).toBeGreaterThan(0);
    expect(sliced.sink.actions.map((a) => a.idempotencyKey)).toEqual(at.actions.map((a) => a.idempotencyKey));
    expect(sliced.stored).toEqual(positions(at.stored.columns()));
    for (const name of ["a", "b", "c"]) {
      expect(sliced.engine.thingState(name)).toEqual(whole.engine.thingState(name));
    }
  });
});
