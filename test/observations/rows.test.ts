import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { migrations } from "../../src/migrations.js";
import {
  DAY_MS,
  ObservationColumnsBuilder,
  openObservations,
  partitionTable,
  storedInput,
  type ObservationDocument,
} from "../../src/observations/index.js";
import { openDatabase } from "../../src/store/index.js";

const T0 = Date.parse("2026-03-10T00:00:00Z");
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** An observation file written on this thread, the day after `T0` open by its clock. */
function open() {
  const dir = mkdtempSync(join(tmpdir(), "dms-rows-"));
  dirs.push(dir);
  const db = openDatabase({ dataDir: dir, migrations });
  const observations = openObservations({ dataDir: dir, db, writerThread: false, clock: () => T0 + 2 * DAY_MS });
  const file = openDatabase({ dataDir: dir, migrations: [], fileName: "observations.sqlite" });
  return {
    ...observations,
    file,
    async close() {
      file.close();
      await observations.close();
      db.close();
    },
  };
}

/** Every way the reader hands a stored document out: FIND's scan and loader, candidates, export pages, a closed day's columns. */
async function readBack(
  o: ReturnType<typeof open>,
  thingTypes: string[],
  count: number,
): Promise<Map<number, string>[]> {
  const window = { tsFrom: -Infinity, tsTo: Infinity, thingTypes };
  const candidates = new Map((await o.reader.candidates(window, 1_000_000)).map(([id, , json]) => [id, json]));
  const scanned = new Map<number, string>();
  const loaded = await o.reader.scan(
    window,
    {
      paths: undefined,
      row: (id, _, json) => scanned.set(id, json),
      projected: () => {},
      tick: () => {},
      remainingMs: () => Infinity,
    },
    () => [...candidates.keys()],
  );
  const exported = new Map<number, string>();
  for (const thingType of new Set(thingTypes)) {
    for (const [id, , , json] of await o.reader.exportPage(
      { thingType },
      -Infinity,
      Infinity,
      { ts: -Infinity, id: 0 },
      1e6,
    ))
      exported.set(id, json);
  }
  const out = [candidates, scanned, loaded, exported];
  for (const m of out) expect(m.size).toBe(count);
  return out;
}

// Names JSON escapes or SQLite cannot hold as they are (quotes, backslashes, controls, lone surrogates) beside plain ones.
const name = fc.oneof(
  fc.string({ minLength: 1, maxLength: 8 }),
  fc.constantFrom("t1", 'q"', "b\\s", "n\nl", "\ud800", "é🙂"),
);
const timestamp = fc.oneof(
  fc.integer({ min: T0 - DAY_MS, max: T0 + DAY_MS }),
  fc.double({ min: T0 - DAY_MS, max: T0 + DAY_MS, noNaN: true }),
);
const observation = fc.record(
  {
    thingName: name,
    thingType: fc.constantFrom("10", 't"y', "20"),
    domain: name,
    timestamp,
    state: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })),
    nested: fc.array(
      fc.record({ type: fc.string(), id: fc.string(), state: fc.dictionary(fc.string(), fc.integer()) }),
      {
        maxLength: 2,
      },
    ),
  },
  { requiredKeys: ["thingName", "thingType", "domain", "timestamp", "state"] },
);

describe("the stored row's document", () => {
  it("reads back as the whole document's JSON, byte for byte, however it was stored (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { minLength: 1, maxLength: 12 }), async (docs) => {
        const o = open();
        try {
          const rows = new ObservationColumnsBuilder(1);
          for (const d of docs)
            rows.addObservation(d.thingName, d.thingType, d.domain, d.timestamp, d.state, d.nested, -1, 0);
          const columns = rows.columns();
          // As JSON has it: -0 is written 0, as JSON.stringify writes it for a whole document too.
          for (let i = 0; i < docs.length; i++)
            expect(storedInput(columns, i).document).toEqual(JSON.parse(JSON.stringify(docs[i])));
          await o.store.insertColumns(columns);
          const expected = docs.map((d) => JSON.stringify(d));
          const thingTypes = [...new Set(docs.map((d) => d.thingType))];
          for (const read of await readBack(o, thingTypes, docs.length)) {
            expect([...read.entries()].sort(([a], [b]) => a - b).map(([, json]) => json)).toEqual(expected);
          }
        } finally {
          await o.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it("stores the engine's plain rows without the members its columns hold, and reads rows of earlier versions as they were", async () => {
    const o = open();
    try {
      const plain: ObservationDocument = {
        thingName: "t1",
        thingType: "10",
        domain: "acme",
        timestamp: T0,
        state: { temp: 1 },
      };
      const rows = new ObservationColumnsBuilder(1);
      rows.addObservation(
        plain.thingName,
        plain.thingType,
        plain.domain,
        plain.timestamp,
        plain.state,
        undefined,
        -1,
        0,
      );
      await o.store.insertColumns(rows.columns());
      // Rows as earlier versions wrote them (the whole document), and a whole document whose first member is `state`.
      const old: ObservationDocument = { ...plain, timestamp: T0 + 1, state: { temp: 2 } };
      const stateFirst = { state: { temp: 3 }, thingName: "t1", thingType: "10", domain: "acme", timestamp: T0 + 2 };
      const table = partitionTable(Math.floor(T0 / DAY_MS));
      o.file
        .prepare(
          `INSERT INTO ${table} (id, thing_name, thing_type, domain, ts, doc) VALUES (100, 't1', '10', 'acme', ?, ?)`,
        )
        .run(old.timestamp, JSON.stringify(old));
      const legacy = new ObservationColumnsBuilder(1);
      legacy.addDocument("t1", "10", "acme", stateFirst.timestamp, JSON.stringify(stateFirst), -1, 0);
      await o.store.insertColumns(legacy.columns());
      const stored = o.file.prepare(`SELECT doc FROM ${table} ORDER BY ts`).pluck().all();
      expect(stored).toEqual(['{"state":{"temp":1}}', JSON.stringify(old), ` ${JSON.stringify(stateFirst)}`]);
      for (const read of await readBack(o, ["10"], 3)) {
        expect([...read.values()].sort()).toEqual(
          [JSON.stringify(plain), JSON.stringify(old), JSON.stringify(stateFirst)].sort(),
        );
      }
    } finally {
      await o.close();
    }
  });
});
