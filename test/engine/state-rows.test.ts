import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { stateMigrations } from "../../src/engine/index.js";
import { RowMaker, stateWriter, valuesOf } from "../../src/engine/state/rows.js";
import { migrate } from "../../src/store/index.js";

describe("state rows", () => {
  it("are written whole, 32 to a statement and the rest one by one; a thing's later row replaces its earlier one", () => {
    const db = new Database(":memory:");
    migrate(db, stateMigrations);
    const write = stateWriter(db);
    const made = new RowMaker(70);
    const add = (name: string, seq: number, source: string | null): void =>
      made.add(name, 1_000 + seq, seq, source, source === null ? null : seq, JSON.stringify({ state: { seq } }));
    // 70 rows: two statements of 32 and 6 alone; thing 3 twice in the first statement, thing 5 in the first and the last part.
    for (let i = 0; i < 67; i++) add(`t${i}`, i, i % 2 === 0 ? "kafka:x:0" : null);
    add("t3", 100, "kafka:x:1");
    add("t5", 101, null);
    add("t66", 102, "kafka:x:2");
    db.transaction(() => write(made.rows.length, valuesOf(made.rows)))();
    const read = db.prepare<[], Record<string, unknown>>("SELECT * FROM engine_thing_state ORDER BY seq").all();
    expect(read).toHaveLength(67);
    const byName = new Map(read.map((r) => [r.thing_name, r]));
    expect(byName.get("t3")).toEqual({
      thing_name: "t3",
      ts: 1_100,
      seq: 100,
      last_source: "kafka:x:1",
      last_offset: 100,
      doc: '{"state":{"seq":100}}',
    });
    expect(byName.get("t5")).toEqual({
      thing_name: "t5",
      ts: 1_101,
      seq: 101,
      last_source: null,
      last_offset: null,
      doc: '{"state":{"seq":101}}',
    });
    expect(byName.get("t66")?.seq).toBe(102);
    expect(byName.get("t40")).toEqual({
      thing_name: "t40",
      ts: 1_040,
      seq: 40,
      last_source: "kafka:x:0",
      last_offset: 40,
      doc: '{"state":{"seq":40}}',
    });
  });
});
