import { createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors/index.js";
import {
  databaseFault,
  migratePg,
  openPgPool,
  pgTransaction,
  TRANSACTION_ATTEMPTS,
  unavailableError,
  type PgPool,
} from "../../src/store/index.js";
import { startCutProxy, type CutProxy } from "../support/cut-proxy.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

let database: PgDatabase;
const pools: PgPool[] = [];

/** A pool of the test's own (ended after the file), on the database or through `port`. */
function pool(options: Parameters<typeof openPgPool>[1] = {}, port?: number): PgPool {
  const url = port === undefined ? database.url : database.url.replace(/:\d+\//, `:${port}/`);
  const p = openPgPool(url, options);
  pools.push(p);
  return p;
}

/** What `promise` rejects with, and how long it took. */
async function failure(promise: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = performance.now();
  try {
    await promise;
  } catch (err) {
    return { err, ms: performance.now() - started };
  }
  throw new Error("expected a rejection");
}

/** Resolves for every caller once `count` of them wait: transactions meet at the same point. */
function barrier(count: number): () => Promise<void> {
  let waiting = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return () => {
    if (++waiting === count) open();
    return opened;
  };
}

beforeAll(async () => {
  database = await createPgDatabase([
    {
      id: "faults-001",
      up: `CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL);
           INSERT INTO accounts VALUES (1, 100), (2, 100);
           CREATE TABLE shifts (doctor TEXT NOT NULL);`,
    },
  ]);
});

afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
  await database?.drop();
});

describe("PostgreSQL going away", () => {
  let proxy: CutProxy;
  beforeAll(async () => {
    proxy = await startCutProxy(5432);
  });
  afterAll(() => proxy.close());

  it("fails queries in flight and new ones as unreachable while cut, and serves again once restored", async () => {
    const p = pool({ connectTimeoutMs: 1000 }, proxy.port);
    expect((await p.query<{ n: number }>("SELECT 1 AS n")).rows).toEqual([{ n: 1 }]);

    // A transaction in flight (its connection checked out) and a statement in flight, when the cut comes.
    const inTransaction = pgTransaction(p, async (tx) => {
      await tx.query("UPDATE accounts SET balance = balance + 1 WHERE id = 1");
      await tx.query("SELECT pg_sleep(5)");
    });
    const inStatement = p.query("SELECT pg_sleep(5)");
    await new Promise((r) => setTimeout(r, 200));
    proxy.cut();
    const lost = await Promise.allSettled([inTransaction, inStatement]);
    for (const outcome of lost) {
      expect(outcome.status).toBe("rejected");
      expect(databaseFault((outcome as PromiseRejectedResult).reason)).toBe("unreachable");
    }

    const refused = await failure(p.query("SELECT 1"));
    expect(databaseFault(refused.err)).toBe("unreachable");
    expect(refused.ms).toBeLessThan(1500);
    const whileCut = await failure(pgTransaction(p, (tx) => tx.query("SELECT 1")));
    expect(databaseFault(whileCut.err)).toBe("unreachable");
    expect(unavailableError(whileCut.err)?.body()).toEqual({
      messageKey: "SERVICE_UNAVAILABLE",
      message: expect.stringContaining("unreachable") as unknown,
    });

    proxy.restore();
    expect((await p.query<{ n: number }>("SELECT 1 AS n")).rows).toEqual([{ n: 1 }]);
    // The transaction cut in flight was not committed.
    const { rows } = await database.pool.query<{ balance: number }>("SELECT balance FROM accounts WHERE id = 1");
    expect(rows[0]!.balance).toBe(100);
  });

  it("gives up a connect the server never answers after the connect timeout", async () => {
    // Accepts the connection and says nothing: a server that hangs, or packets dropped on the way.
    const sockets = new Set<Socket>();
    const silent: Server = createServer((s) => void sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const p = pool({ connectTimeoutMs: 300 }, (silent.address() as AddressInfo).port);
      const { err, ms } = await failure(p.query("SELECT 1"));
      expect(databaseFault(err)).toBe("unreachable");
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(2000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("pool exhaustion", () => {
  it("fails a query that waits longer than the connect timeout for a connection, and serves once one is free", async () => {
    const p = pool({ max: 2, connectTimeoutMs: 300 });
    const busy = [p.query("SELECT pg_sleep(1.5)"), p.query("SELECT pg_sleep(1.5)")];
    await new Promise((r) => setTimeout(r, 100));
    const { err, ms } = await failure(p.query("SELECT 1"));
    expect((err as Error).message).toBe("timeout exceeded when trying to connect");
    expect(databaseFault(err)).toBe("unreachable");
    expect(unavailableError(err)?.key).toBe("SERVICE_UNAVAILABLE");
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(1200);
    await Promise.all(busy);
    expect((await p.query<{ n: number }>("SELECT 1 AS n")).rows).toEqual([{ n: 1 }]);
  });
});

describe("statement timeout", () => {
  it("cancels a statement that runs longer, as a timeout fault, and leaves the connection usable", async () => {
    const p = pool({ max: 1, statementTimeoutMs: 200 });
    const { err, ms } = await failure(p.query("SELECT pg_sleep(5)"));
    expect((err as { code?: string }).code).toBe("57014");
    expect(databaseFault(err)).toBe("timeout");
    expect(unavailableError(err)?.body()).toEqual({
      messageKey: "SERVICE_UNAVAILABLE",
      message: expect.stringContaining("did not answer in time") as unknown,
    });
    expect(ms).toBeLessThan(2000);
    // The one connection of the pool serves the next statement.
    expect((await p.query<{ n: number }>("SELECT 1 AS n")).rows).toEqual([{ n: 1 }]);
  });

  it("does not cut migrations, which may take longer than a request's statement", async () => {
    const p = pool({ statementTimeoutMs: 100 });
    const applied = await migratePg(p, [{ id: "slow-001", up: "SELECT pg_sleep(0.4)" }]);
    expect(applied).toEqual(["slow-001"]);
  });
});

describe("serialization failures and deadlocks", () => {
  it("runs again the transaction PostgreSQL chose as a deadlock's victim: both transfers are made", async () => {
    const p = pool();
    const meet = barrier(2);
    let runs = 0;
    const transfer = (from: number, to: number) =>
      pgTransaction(p, async (tx) => {
        const first = ++runs <= 2;
        await tx.query("UPDATE accounts SET balance = balance - 10 WHERE id = $1", [from]);
        // Each holds its first row while it asks for the other's: a deadlock, on the first runs only.
        if (first) await meet();
        await tx.query("UPDATE accounts SET balance = balance + 10 WHERE id = $1", [to]);
      });
    const before = await database.pool.query<{ id: number; balance: number }>(
      "SELECT id, balance FROM accounts ORDER BY id",
    );
    await Promise.all([transfer(1, 2), transfer(2, 1)]);
    expect(runs).toBe(3);
    const after = await database.pool.query<{ id: number; balance: number }>(
      "SELECT id, balance FROM accounts ORDER BY id",
    );
    expect(after.rows).toEqual(before.rows);
  });

  it("runs again a SERIALIZABLE transaction that failed on a write skew: both writes are made once", async () => {
    const p = pool();
    const meet = barrier(2);
    let runs = 0;
    // Each adds a doctor on call when it sees fewer than two: serially the second sees the first.
    const addOnCall = (doctor: string) =>
      pgTransaction(p, async (tx) => {
        const first = ++runs <= 2;
        await tx.query("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
        const { rows } = await tx.query<{ n: number }>("SELECT count(*)::int AS n FROM shifts");
        if (first) await meet();
        if (rows[0]!.n < 2) await tx.query("INSERT INTO shifts VALUES ($1)", [doctor]);
      });
    await Promise.all([addOnCall("a"), addOnCall("b")]);
    expect(runs).toBe(3);
    const { rows } = await database.pool.query<{ doctor: string }>("SELECT doctor FROM shifts ORDER BY doctor");
    expect(rows).toEqual([{ doctor: "a" }, { doctor: "b" }]);
  });

  it("gives up after a bounded number of runs, and never runs again a transaction that failed otherwise", async () => {
    const p = pool();
    let runs = 0;
    const { err } = await failure(
      pgTransaction(p, async (tx) => {
        runs++;
        await tx.query("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$");
      }),
    );
    expect((err as { code?: string }).code).toBe("40001");
    expect(runs).toBe(TRANSACTION_ATTEMPTS);
    expect(databaseFault(err)).toBe("contention");

    runs = 0;
    const duplicate = await failure(
      pgTransaction(p, async (tx) => {
        runs++;
        await tx.query("INSERT INTO accounts VALUES (1, 0)");
      }),
    );
    expect((duplicate.err as { code?: string }).code).toBe("23505");
    expect(runs).toBe(1);
    expect(databaseFault(duplicate.err)).toBeUndefined();
    expect(unavailableError(duplicate.err)).toBeUndefined();
  });
});

describe("what counts as a database fault", () => {
  /** An error as node-postgres or Node make it: a message and a code. */
  const coded = (code: string, message = "x"): Error => Object.assign(new Error(message), { code });

  it("knows the server's and the network's codes, and node-postgres's own messages", () => {
    expect(
      ["57P01", "57P03", "08006", "08001", "53300", "ECONNREFUSED", "EHOSTUNREACH"].map((c) => databaseFault(coded(c))),
    ).toEqual(Array(7).fill("unreachable"));
    expect(databaseFault(coded("57014"))).toBe("timeout");
    expect(databaseFault(coded("40P01"))).toBe("contention");
    expect(databaseFault(new Error("Connection terminated unexpectedly"))).toBe("unreachable");
    expect(databaseFault(new Error("Connection terminated due to connection timeout"))).toBe("unreachable");
    // A connect to a name with several addresses, each refused.
    const refused = new AggregateError([coded("ECONNREFUSED"), coded("ECONNREFUSED")], "");
    expect(databaseFault(refused)).toBe("unreachable");
    // What a FIND thread's error keeps of it across the thread: the message.
    expect(databaseFault(new Error("connect ECONNREFUSED 127.0.0.1:5432"))).toBe("unreachable");
  });

  it("leaves the request's own errors and the interface's errors alone", () => {
    for (const err of [
      coded("23505", "duplicate key value violates unique constraint"),
      coded("42P01", 'relation "nope" does not exist'),
      coded("22P02", "invalid input syntax for type bigint"),
      new ApiError("INVALID_ARGUMENTS", "Property url is invalid: ECONNREFUSED is no host"),
      new Error("Connection to the SMTP server refused"),
      "ECONNREFUSED",
    ])
      expect(databaseFault(err)).toBeUndefined();
  });
});
