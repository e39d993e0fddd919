import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { FileLockStore, PgLockStore, type LockStore } from "../../src/locks/index.js";
import { openPgPool, type PgPool } from "../../src/store/index.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

/** Two processes' lock stores over one database (two pools) or one data dir (two stores), and how a holder dies. */
interface LockBackend {
  name: string;
  pair(): Promise<[LockStore, LockStore]>;
  /** Leaves the lock `name` held by a process that is gone. */
  holdAndDie(name: string): Promise<void>;
  /** Leaves the lock `name` as a previous process left it whose pid this process has now; none where that cannot be. */
  holdAsPreviousSelf?(name: string): void;
}

const databases: PgDatabase[] = [];
const pools: PgPool[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  await Promise.all(databases.map((d) => d.drop()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function pgBackend(): LockBackend {
  let database: PgDatabase | undefined;
  /** A pool of this database; `ended` false for the dead holder's, whose connection never comes back to it. */
  const open = async (ended = true): Promise<PgPool> => {
    if (!database) databases.push((database = await createPgDatabase([])));
    const pool = openPgPool(database.url);
    if (ended) pools.push(pool);
    return pool;
  };
  return {
    name: "PostgreSQL",
    pair: async () => [new PgLockStore(await open()), new PgLockStore(await open())],
    async holdAndDie(name) {
      const pool = await open(false);
      let held!: () => void;
      const taken = new Promise<void>((resolve) => (held = resolve));
      // The work never ends: the lock goes only with the process's connections.
      void new PgLockStore(pool).exclusive(name, () => {
        held();
        return new Promise(() => {});
      });
      await taken;
      // The holder's connection ends as a dead process's would: the only advisory lock in the database.
      const { rowCount } = await pool.query(
        `SELECT pg_terminate_backend(pid) FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      expect(rowCount).toBe(1);
    },
  };
}

function fileBackend(): LockBackend {
  const dir = mkdtempSync(join(tmpdir(), "dms-locks-"));
  dirs.push(dir);
  return {
    name: "files in the data dir",
    pair: async () => [new FileLockStore(dir), new FileLockStore(dir)],
    async holdAndDie(name) {
      // A pid that was a process's and is no more.
      const gone = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();
      writeFileSync(join(dir, `${name}.lock`), `${gone} a-token`);
    },
    holdAsPreviousSelf(name) {
      // A container restarted: the same pid, another process.
      writeFileSync(join(dir, `${name}.lock`), `${process.pid} the-previous-process`);
    },
  };
}

describe.each([pgBackend(), fileBackend()])("lock store contract: $name", (backend) => {
  it("runs work under one name in one process at a time, and under other names at once", async () => {
    const [a, b] = await backend.pair();
    const log: string[] = [];
    const work = (who: string) => async () => {
      log.push(`${who} in`);
      await sleep(150);
      log.push(`${who} out`);
      return who;
    };
    const results = await Promise.all([a.exclusive("x", work("a")), b.exclusive("x", work("b"))]);
    expect(results).toEqual(["a", "b"]);
    expect(log.join(",")).toMatch(/^(a in,a out,b in,b out|b in,b out,a in,a out)$/);

    log.length = 0;
    await Promise.all([a.exclusive("y", work("a")), b.exclusive("z", work("b"))]);
    expect(log.slice(0, 2).sort()).toEqual(["a in", "b in"]);
  });

  it("releases the lock when the work fails", async () => {
    const [a, b] = await backend.pair();
    await expect(a.exclusive("f", () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await b.exclusive("f", async () => "next")).toBe("next");
  });

  it("takes over a lock whose holder died", async () => {
    await backend.holdAndDie("d");
    const [a] = await backend.pair();
    const got = await Promise.race([a.exclusive("d", async () => "taken"), sleep(5000).then(() => "still held")]);
    expect(got).toBe("taken");
  });

  it.runIf(backend.holdAsPreviousSelf !== undefined)(
    "takes over a lock a previous process with this process's pid left",
    async () => {
      backend.holdAsPreviousSelf!("s");
      const [a] = await backend.pair();
      const got = await Promise.race([a.exclusive("s", async () => "taken"), sleep(5000).then(() => "still held")]);
      expect(got).toBe("taken");
    },
  );
});
