import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, startCheckpointer, type Db } from "../../src/store/index.js";

const PAGE_ROWS = 100;

/** 30 commits of about 100 pages each, with a pause after each as a stream's batches have. */
async function writeBatches(db: Db): Promise<void> {
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  for (let b = 0; b < 30; b++) {
    db.transaction(() => {
      for (let i = 0; i < PAGE_ROWS; i++) insert.run("x".repeat(4000));
    })();
    await new Promise((r) => setTimeout(r, 40));
  }
}

describe("background WAL checkpoints", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const open = (): { db: Db; wal: () => number } => {
    const dir = mkdtempSync(join(tmpdir(), "dms-ckpt-"));
    dirs.push(dir);
    const db = openDatabase({ dataDir: dir, migrations: [] });
    return { db, wal: () => statSync(join(dir, "dms.sqlite-wal")).size };
  };

  it("keep the WAL short without the writer's commits doing the copying", async () => {
    // Without a checkpoint (the writer's own threshold raised as startCheckpointer raises it), the WAL holds every page.
    const alone = open();
    alone.db.pragma("wal_autocheckpoint = 16384");
    await writeBatches(alone.db);
    const walAlone = alone.wal();
    expect(walAlone).toBeGreaterThan(10 * 2 ** 20);
    alone.db.close();

    // With the background thread the pages go back between batches and the writer starts the WAL over.
    const helped = open();
    const checkpointer = startCheckpointer(helped.db, 10);
    await writeBatches(helped.db);
    // Relative, not a fixed size: on a loaded machine the thread lags a few batches behind, but
    // without it the WAL holds every page written (about 12 MiB).
    expect(helped.wal()).toBeLessThan(walAlone / 2);
    expect((helped.db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(30 * PAGE_ROWS);
    await checkpointer.stop();
    helped.db.close();
  });

  it("stop() waits for the thread even when nothing else keeps the process running", () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-ckpt-"));
    dirs.push(dir);
    const script = join(dir, "stop.mts");
    const store = resolve("src/store/index.ts");
    writeFileSync(
      script,
      `import { openDatabase, startCheckpointer } from ${JSON.stringify(store)};
const db = openDatabase({ dataDir: ${JSON.stringify(dir)}, migrations: [] });
await startCheckpointer(db).stop();
db.close();
console.log("closed");`,
    );
    const run = spawnSync(process.execPath, ["--import", "tsx", script], { encoding: "utf8", timeout: 30_000 });
    expect(run.stdout.trim()).toBe("closed");
  });
});
