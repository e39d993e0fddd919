import { describe, expect, it } from "vitest";
import { packChunk, unpackChunk } from "../../src/engine/sources/kafka-chunks.js";
import type { RawObservation } from "../../src/engine/index.js";

describe("a chunk posted from the fetch thread", () => {
  it("comes back with every value, key and offset, each value a view of one buffer", () => {
    const values = ['{"thingName":"a"}', "", "not json \u00e9", '{"thingName":"b","state":{}}'];
    // Offsets of a compacted partition: not consecutive.
    const offsets = ["7", "8", "12", "9007199254740"];
    const chunk: RawObservation[] = values.map((v, i) => ({
      key: i === 1 ? null : `k${i}`,
      value: Buffer.from(v),
      position: { source: "kafka:t", partition: 3, offset: offsets[i]!, epoch: 2 },
    }));
    const packed = structuredClone(packChunk(chunk));
    const back = unpackChunk(packed);
    expect(back.map((r) => Buffer.from(r.value).toString())).toEqual(values);
    expect(back.map((r) => r.key)).toEqual(["k0", null, "k2", "k3"]);
    expect(back.map((r) => r.position)).toEqual(chunk.map((r) => r.position));
    expect(new Set(back.map((r) => r.value.buffer)).size).toBe(1);
  });
});
