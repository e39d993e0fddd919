import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Turns } from "../../src/observations/find/turns.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

/**
 * FIND threads are shared by every caller: a caller's burst of heavy queries must not hold them
 * all, nor put every other caller's query behind the burst (a tenant never slows another's data).
 */

const refused = (why: string) => new Error(`refused: ${why}`);
const expired = () => new Error("expired");
const FAR = () => Date.now() + 60_000;

describe("Turns", () => {
  it("gives free threads to callers in turn, each on all threads but one", async () => {
    const turns = new Turns(3, { waiting: 100, waitingPerCaller: 100 });
    const started: string[] = [];
    const releases: (() => void)[] = [];
    const take = (caller: string) =>
      turns.take(caller, FAR(), refused, expired).then((release) => {
        started.push(caller);
        releases.push(release);
      });
    const all = ["a", "a", "a", "a", "a", "b", "b", "c"].map(take);
    await new Promise((r) => setImmediate(r));
    // a may hold 2 of the 3 threads; b (after a's burst) gets the third.
    expect(started).toEqual(["a", "a", "b"]);
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
    // The freed thread goes to c, whose turn comes before a's and b's next.
    expect(started).toEqual(["a", "a", "b", "c"]);
    releases.shift()!();
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(["a", "a", "b", "c", "a", "b"]);
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    expect(started.filter((c) => c === "a")).toHaveLength(5);
  });

  it("refuses past the waiting limits, and a request that waits past its deadline leaves the line", async () => {
    const turns = new Turns(1, { waiting: 3, waitingPerCaller: 2 });
    const first = await turns.take("a", FAR(), refused, expired);
    const a1 = turns.take("a", FAR(), refused, expired);
    const a2 = turns.take("a", Date.now() + 30, refused, expired);
    await expect(turns.take("a", FAR(), refused, expired)).rejects.toThrow("refused: caller");
    const b1 = turns.take("b", FAR(), refused, expired);
    await expect(turns.take("c", FAR(), refused, expired)).rejects.toThrow("refused: all");
    await expect(a2).rejects.toThrow("expired");
    // a2 left the line: c now waits where it could not.
    const c1 = turns.take("c", FAR(), refused, expired);
    first();
    first(); // a second release changes nothing
    const order: string[] = [];
    for (const [name, p] of [
      ["a1", a1],
      ["b1", b1],
      ["c1", c1],
    ] as const)
      void p.then((release) => {
        order.push(name);
        setImmediate(release);
      });
    await Promise.all([a1, b1, c1]);
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual(["a1", "b1", "c1"]);
  });

  it("never runs more than its threads, nor a caller more than all but one, and leaves no thread idle that a caller could take", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.oneof(fc.constantFrom("a", "b", "c", "d"), fc.constant("release")), { maxLength: 40 }),
        async (slots, steps) => {
          const turns = new Turns(slots, { waiting: 1000, waitingPerCaller: 1000 });
          const running: { caller: string; release: () => void }[] = [];
          const waiting = new Map<string, number>();
          for (const step of steps) {
            if (step === "release") running.shift()?.release();
            else {
              waiting.set(step, (waiting.get(step) ?? 0) + 1);
              void turns.take(step, FAR(), refused, expired).then((release) => {
                waiting.set(step, waiting.get(step)! - 1);
                running.push({ caller: step, release });
              });
            }
            await new Promise((r) => setImmediate(r));
            const per = new Map<string, number>();
            for (const r of running) per.set(r.caller, (per.get(r.caller) ?? 0) + 1);
            expect(running.length).toBeLessThanOrEqual(slots);
            for (const n of per.values()) expect(n).toBeLessThanOrEqual(turns.perCaller);
            if (running.length < slots)
              for (const [caller, n] of waiting) if (n > 0) expect(per.get(caller) ?? 0).toBe(turns.perCaller);
          }
          for (const r of running) r.release();
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("FIND in turns, end to end", () => {
  let t: TestDms;
  beforeAll(async () => {
    t = await startTestDms({ env: { DMS_FIND_THREADS: "2", DMS_FIND_TIMEOUT_MS: "6000" } });
    // Values on which each of 800 patterns reads 250 characters: far more work than the 6 s budget
    // on any machine (200 patterns once finished within it), so every heavy query runs to its budget.
    const long = "a".repeat(250);
    await t.dms.services.observations.insertBatch(
      Array.from({ length: 10_000 }, (_, i) => ({
        document: {
          thingName: "t1",
          thingType: "10",
          domain: "acme",
          timestamp: Date.now() - 1000 - i,
          state: { s: long },
        },
      })),
    );
    await t.dms.services.observations.insertBatch([
      {
        document: {
          thingName: "e1",
          thingType: "20",
          domain: "east",
          timestamp: Date.now() - 1000,
          state: { power: 5 },
        },
      },
    ]);
  });
  afterAll(() => t.close());

  const range = { range: { timestamp: { gte: "now-1d/d" } } };
  const heavy = {
    query: {
      size: 0,
      query: {
        bool: {
          filter: [range],
          should: Array.from({ length: 800 }, (_, i) => ({ wildcard: { "state.s": `*a*a*a*${i}*b` } })),
        },
      },
    },
  };

  it("another domain's query is answered while one domain's burst of heavy queries runs", async () => {
    // Both callers signed in (a first sign-in hashes a password: seconds on a busy machine) and both
    // threads started (a thread's first start loads the FIND modules), before anything is timed.
    const light = (user: string) => t.call("POST", "/observations/find", { user, body: { query: { query: range } } });
    for (const r of await Promise.all([light("alice"), light("eastie")])) expect(r.status).toBe(200);
    for (const r of await Promise.all([light("alice"), light("eastie")])) expect(r.status).toBe(200);
    const burst = Array.from({ length: 4 }, () => t.call("POST", "/observations/find", { user: "alice", body: heavy }));
    await new Promise((r) => setTimeout(r, 1000));
    const started = Date.now();
    const res = await light("eastie");
    const waited = Date.now() - started;
    expect(res.status).toBe(200);
    expect((await json(res)).hits.total).toBe(1);
    // Not behind the burst (first in, first out, it waited for the heavy queries' 6 s budget): on the thread kept free.
    expect(waited).toBeLessThan(3000);
    for (const r of await Promise.all(burst)) expect(r.status).toBe(400);
  }, 60_000);
});
