import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeMessages, MemoryStateStore, RuleEngine, type RawObservation } from "../../src/engine/index.js";
import { documents, storedInput, type ObservationColumns } from "../../src/observations/index.js";
import { acmeThings, CollectingSink, hot } from "./support.js";

// A name JSON escapes: its rows keep the whole document.
const resolveThing = acmeThings(["a", "b", 'q"1']);

/** Observations whose state the decode found as text: the property must reach that path. */
let fromText = 0;

/** The engine's stored rows of `texts` (observation JSON, one a message), as the observation store would get them. */
function stored(texts: readonly string[]): ObservationColumns {
  const batches: ObservationColumns[] = [];
  const engine = new RuleEngine({
    resolveThing,
    state: new MemoryStateStore(),
    sink: new CollectingSink(),
    observations: { insertColumns: (columns) => void batches.push(columns) },
    clock: () => 1_000_000,
  });
  engine.load([hot]);
  const raws: RawObservation[] = texts.map((text, i) => ({
    key: null,
    value: Buffer.from(text),
    position: { source: "kafka:state-text", partition: 0, offset: String(i) },
  }));
  const items = decodeMessages(raws);
  fromText += items.filter((item) => (item.stateStart ?? -1) >= 0).length;
  return engine.process(items).stored.columns();
}

describe("the stored document's state is the input's text where that is JSON.stringify's, else stringified", () => {
  it("any state, written compactly or with whitespace, stores as JSON.stringify of the decoded state (property)", () => {
    const scalar = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
    );
    const key = fc.oneof(fc.constantFrom("temp", "hum", "0", "12"), fc.string({ maxLength: 5 }));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("a", "b", 'q"1'), fc.dictionary(key, scalar, { maxKeys: 6 }), fc.boolean()), {
          minLength: 1,
          maxLength: 20,
        }),
        (observations) => {
          const texts = observations.map(([thingName, state, spaced], i) =>
            spaced
              ? JSON.stringify({ thingName, timestamp: 1_763_000_000_000 + i, state }, null, 1)
              : JSON.stringify({ thingName, timestamp: 1_763_000_000_000 + i, state }),
          );
          const columns = stored(texts);
          expect(columns.count).toBe(texts.length);
          for (let i = 0; i < texts.length; i++) {
            const input = JSON.parse(texts[i]!) as { state: Record<string, unknown> };
            // The row's document as the store keeps it (lean: its state alone), then whole, as readers get it.
            const { thingName } = input as unknown as { thingName: string };
            expect(documents(columns)(i)).toBe(
              thingName === 'q"1'
                ? JSON.stringify({
                    thingName,
                    thingType: "10",
                    domain: "acme",
                    timestamp: 1_763_000_000_000 + i,
                    state: input.state,
                  })
                : JSON.stringify({ state: input.state }),
            );
            const { timestamp } = input as unknown as { timestamp: number };
            expect(JSON.stringify(storedInput(columns, i).document)).toBe(
              JSON.stringify({ thingName, thingType: "10", domain: "acme", timestamp, state: input.state }),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
    expect(fromText).toBeGreaterThan(100);
  });
});
