import { afterAll, describe, expect, it } from "vitest";
import { DAY_MS, type ObservationDocument } from "../../src/observations/index.js";
import { OBSERVATION_BACKENDS, type OpenedBackend } from "./backends.js";

/**
 * One contract, every implementation of the observation store and reader seams: what the
 * engine, FIND, exports and retention rely on holds whichever database is behind them.
 */
const T0 = Date.parse("2026-03-01T00:00:00Z");

const doc = (timestamp: number, thingName = "t1", thingType = "10"): ObservationDocument => ({
  thingName,
  thingType,
  domain: "acme",
  timestamp,
  state: { v: timestamp - T0, text: 'tab\there, "quotes", back\\slash\nand a line' },
});

const everything = { tsFrom: -Infinity, tsTo: Infinity, thingTypes: ["10"] };

describe.each(OBSERVATION_BACKENDS)("the observation store on $name", (backend) => {
  const opened: OpenedBackend[] = [];
  const open = async (): Promise<OpenedBackend> => {
    const o = await backend.open();
    opened.push(o);
    return o;
  };
  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
  });
  const timestamps = async (o: OpenedBackend): Promise<number[]> =>
    (await o.reader.candidates(everything, 1_000_000))
      .map(([, , json]) => (JSON.parse(json) as ObservationDocument).timestamp)
      .sort((a, b) => a - b);

  it("stores a batch across days and reads back each document as it was, by window, type and thing", async () => {
    const o = await open();
    const times = [T0 - 1, T0, T0 + DAY_MS - 1, T0 + DAY_MS, T0 + 5 * DAY_MS + 7];
    await o.store.insertBatch([
      ...times.map((t) => ({ document: doc(t) })),
      { document: doc(T0 + 1, "t2") },
      { document: doc(T0 + 2, "t3", "20") },
    ]);
    expect(await o.store.count()).toBe(times.length + 2);
    const rows = await o.reader.candidates(everything, 100);
    expect(new Set(rows.map(([id]) => id)).size).toBe(rows.length);
    for (const [, thingType, json] of rows) {
      const stored = JSON.parse(json) as ObservationDocument;
      expect(thingType).toBe("10");
      expect(stored).toEqual(doc(stored.timestamp, stored.thingName));
    }
    const window = await o.reader.candidates({ tsFrom: T0, tsTo: T0 + DAY_MS, thingTypes: ["10", "20"] }, 100);
    expect(window).toHaveLength(5);
    const byThing = await o.reader.candidates({ ...everything, thingNames: ["t2"] }, 100);
    expect(byThing.map(([, , json]) => (JSON.parse(json) as ObservationDocument).thingName)).toEqual(["t2"]);
    expect(await o.reader.candidates(everything, 2)).toHaveLength(2);
  });

  it("streams a scan to its visitor, then answers the picked documents from the same snapshot", async () => {
    const o = await open();
    await o.store.insertBatch(Array.from({ length: 2500 }, (_, i) => ({ document: doc(T0 + i) })));
    const seen: number[] = [];
    const whole = await o.reader.scan(
      everything,
      {
        paths: undefined,
        row: (id) => seen.push(id),
        projected: (id) => seen.push(id),
        tick: () => {},
        remainingMs: () => 10_000,
      },
      () => seen.slice(0, 3),
    );
    expect(seen).toHaveLength(2500);
    expect([...whole.keys()].sort((a, b) => a - b)).toEqual(seen.slice(0, 3).sort((a, b) => a - b));
    for (const json of whole.values()) expect((JSON.parse(json) as ObservationDocument).thingName).toBe("t1");
  });

  it("stores a replayed stream position once, whichever batch brings it again", async () => {
    const o = await open();
    const batch = (offsets: number[]) =>
      offsets.map((offset) => ({ from: { stream: "kafka:obs:0", offset }, document: doc(T0 + offset) }));
    await o.store.insertBatch(batch([0, 1, 2]));
    await o.store.insertBatch(batch([1, 2, 3]));
    await o.store.insertBatch(batch([2]));
    expect(await timestamps(o)).toEqual([T0, T0 + 1, T0 + 2, T0 + 3]);
  });

  it("exports page in (ts, id) order across days", async () => {
    const o = await open();
    const times = [T0 + 2 * DAY_MS + 5, T0 + 3, T0 + DAY_MS, T0 + 3, T0 + 2 * DAY_MS];
    await o.store.insertBatch(times.map((t) => ({ document: doc(t) })));
    const pages: number[][] = [];
    let after = { ts: -8_640_000_000_000_000, id: 0 };
    for (;;) {
      const page = await o.reader.exportPage({ thingType: "10" }, T0, T0 + 10 * DAY_MS, after, 2);
      if (page.length === 0) break;
      pages.push(page.map(([, ts]) => ts));
      const [id, ts] = page[page.length - 1]!;
      after = { ts, id };
    }
    expect(pages).toEqual([[T0 + 3, T0 + 3], [T0 + DAY_MS, T0 + 2 * DAY_MS], [T0 + 2 * DAY_MS + 5]]);
    const byThings = await o.reader.exportPage({ things: ["t1"] }, T0, T0 + DAY_MS, { ts: T0, id: 0 }, 10);
    expect(byThings.map(([, ts, name]) => [ts, name])).toEqual([
      [T0 + 3, "t1"],
      [T0 + 3, "t1"],
    ]);
  });

  it("retention drops whole days and deletes the cut day's older rows, exactly; a late row makes its day again", async () => {
    const o = await open();
    const cutoff = T0 + 2 * DAY_MS + 1000;
    const times = [T0, T0 + 1, T0 + DAY_MS, cutoff - 2, cutoff - 1, cutoff, cutoff + 1, T0 + 4 * DAY_MS];
    await o.store.insertBatch(times.map((t) => ({ document: doc(t) })));
    // Whole days count whole, whatever the limit; the cut day's rows come `limit` at a time.
    expect(await o.store.deleteOlderThan(cutoff, 1)).toBe(3);
    expect(await o.store.deleteOlderThan(cutoff, 1)).toBe(1);
    expect(await o.store.deleteOlderThan(cutoff, 10)).toBe(1);
    expect(await o.store.deleteOlderThan(cutoff, 10)).toBe(0);
    expect(await timestamps(o)).toEqual([cutoff, cutoff + 1, T0 + 4 * DAY_MS]);
    await o.store.insertBatch([{ document: doc(T0 + 5) }]);
    expect(await timestamps(o)).toContain(T0 + 5);
  });
});
