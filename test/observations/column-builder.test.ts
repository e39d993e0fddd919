import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/migrations.js";
import { DAY_MS, OBSERVATIONS_FILE, openObservations, type OpenedObservations } from "../../src/observations/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";

/**
 * The column cache of closed days is built by a thread of its own beside the
 * observation writer (never between its inserts), and built again when a closed
 * day's late rows pass a sixteenth of it (fewer are read beside its columns).
 */

const DAY = Math.floor(Date.now() / DAY_MS) - 5;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function open(): { opened: OpenedObservations; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "dms-column-builder-"));
  const db: Db = openDatabase({ dataDir: dir, migrations });
  const opened = openObservations({ dataDir: dir, db, writerThread: true, columnsEveryMs: 50 });
  cleanups.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => {
      db.close();
    },
    () => opened.close(),
  );
  return { opened, file: join(dir, OBSERVATIONS_FILE) };
}

const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    document: {
      thingName: `t${i % 5}`,
      thingType: "1",
      domain: "acme",
      timestamp: DAY * DAY_MS + (from + i) * 1000,
      state: { temp: i % 40 },
    },
  }));

/** The token of the day's stored columns, once it names `maxId` (polled: the builder runs on its own). */
async function columnsBuiltUpTo(file: string, maxId: number): Promise<string> {
  const db = new Database(file, { readonly: true });
  try {
    for (const end = Date.now() + 10_000; Date.now() < end;) {
      const row = db.prepare("SELECT token FROM observation_columns WHERE day = ?").get(DAY) as
        { token: string } | undefined;
      if (row?.token.startsWith(`${maxId}:`)) return row.token;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no columns of day ${DAY} up to id ${maxId}`);
  } finally {
    db.close();
  }
}

describe("column builder thread", () => {
  it("stores a closed day's columns and builds them again once its late rows are many", async () => {
    const { opened, file } = open();
    await opened.store.insertBatch(rows(0, 300));
    // Indexes the closed day (and builds its columns, forced); then late rows change it.
    await opened.store.maintain();
    expect(await columnsBuiltUpTo(file, 300)).toBe("300:0:1");
    // 10 late rows of 300: readers read them beside the columns, the builder leaves the day alone.
    await opened.store.insertBatch(rows(300, 10));
    await new Promise((r) => setTimeout(r, 500));
    expect(await columnsBuiltUpTo(file, 300)).toBe("300:0:1");
    // 30: past a sixteenth. Not by the writer (its passes leave columns to the builder): by the builder thread.
    await opened.store.insertBatch(rows(310, 20));
    expect(await columnsBuiltUpTo(file, 330)).toBe("330:0:1");
  });
});
