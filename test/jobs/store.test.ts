import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteJobStore, type JobStore, type NewJobRow } from "../../src/jobs/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, type Db } from "../../src/store/index.js";

/** The jobs' store on its own: its transaction is what the rollout and the device side rely on. */

let db: Db;
let store: JobStore;

beforeAll(async () => {
  db = openDatabase({ dataDir: ":memory:", migrations });
  store = new SqliteJobStore(db);
  await store.insertDocument({
    document_id: "doc",
    document_name: "firmware",
    domain: "acme",
    created_at: "2026-01-01T00:00:00.000Z",
    upload_expires_at: 0,
  });
});
afterAll(() => db.close());

const job = (jobId: string): NewJobRow => ({
  jobId,
  domain: "acme",
  description: "update",
  targetSelection: "SNAPSHOT",
  documentId: "doc",
  targetThings: ["t1", "t2"],
  createdAt: "2026-01-01T00:00:00.000Z",
  maximumPerMinute: null,
  inProgressTimeoutMinutes: null,
  abortConfig: null,
});

describe("SqliteJobStore", () => {
  it("a document is uploaded once", async () => {
    expect(await store.uploadDocument("doc", '{"op":"update"}', "2026-01-01T00:00:01.000Z")).toBe(true);
    expect(await store.uploadDocument("doc", "{}", "2026-01-01T00:00:02.000Z")).toBe(false);
    expect(await store.document("doc")).toMatchObject({ content: '{"op":"update"}', domain: "acme" });
  });

  it("a transaction commits all of its work or, when it throws, none of it", async () => {
    await store.transaction(async () => {
      await store.insertJob(job("kept"));
      await store.queue("kept", "t1", 1, 1_000);
    });
    await expect(
      store.transaction(async () => {
        await store.insertJob(job("gone"));
        await store.queue("gone", "t1", 1, 1_000);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await store.job("gone")).toBeUndefined();
    expect(await store.executions("gone", null)).toEqual([]);
    expect(await store.job("kept")).toMatchObject({ status: "IN_PROGRESS" });
    expect(await store.release("kept", null)).toEqual(["t1"]);
  });

  it("a statement of another promise chain queued in the caller's turn stays out of the transaction", async () => {
    db.exec("CREATE TABLE IF NOT EXISTS foreign_writes (n INTEGER)");
    const failed = store.transaction(async () => {
      await store.insertJob(job("interleaved"));
      await store.queue("interleaved", "t1", 1, 1_000);
      throw new Error("rolled back");
    });
    // Another chain's reactions, queued in the same turn (the engine's state flush, a dead letter):
    // begun in this turn, the transaction would have taken these writes in and rolled them back.
    const foreign = Promise.resolve()
      .then(() => db.prepare("INSERT INTO foreign_writes (n) VALUES (1)").run())
      .then(() => db.prepare("INSERT INTO foreign_writes (n) VALUES (2)").run());
    await expect(failed).rejects.toThrow("rolled back");
    await foreign;
    expect(await store.job("interleaved")).toBeUndefined();
    expect(db.prepare("SELECT count(*) AS n FROM foreign_writes").get()).toEqual({ n: 2 });
  });

  it("transactions started together run one after the other, each seeing the one before", async () => {
    await store.insertJob(job("serial"));
    const order: string[] = [];
    const step = (thingName: string) =>
      store.transaction(async () => {
        order.push(`begin ${thingName}`);
        const latest = await store.execution("serial", "t1");
        await store.queue("serial", "t1", (latest?.execution_number ?? 0) + 1, 1_000);
        order.push(`end ${thingName}`);
        return thingName;
      });
    expect(await Promise.all([step("a"), step("b"), step("c")])).toEqual(["a", "b", "c"]);
    expect(order).toEqual(["begin a", "end a", "begin b", "end b", "begin c", "end c"]);
    expect((await store.executions("serial", null)).map((e) => e.execution_number)).toEqual([1, 2, 3]);
  });
});
