import type { RawObservation, ThingInfo } from "../../src/engine/index.js";

/** Things t0..t(THINGS-1), of type 10 in acme (as `hot` in support.ts filters them). */
export const THINGS = 40;

export const resolveThing = (thingName: string): ThingInfo => ({
  thingName,
  thingType: "10",
  domain: "acme",
  domains: new Set(["root", "acme"]),
  checks: new Map(),
});

/** Observation `i` of a Kafka stream: thing i % THINGS, on partition 0 of `kafka:stream` at offset i. */
export function message(i: number): RawObservation {
  const body = { thingName: `t${i % THINGS}`, timestamp: 1_763_000_000_000 + i, state: { temp: 20 + (i % 17) } };
  return {
    key: null,
    value: Buffer.from(JSON.stringify(body)),
    position: { source: "kafka:stream", partition: 0, offset: String(i) },
  };
}

/** Observations [from, to) of the stream. */
export function messages(from: number, to: number): RawObservation[] {
  return Array.from({ length: to - from }, (_, k) => message(from + k));
}
