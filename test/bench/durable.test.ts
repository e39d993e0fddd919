import { describe, expect, it } from "vitest";
import { runDurable } from "../../bench/engine/durable.js";

describe("bench/engine's durable section", () => {
  it("runs each engine in a process of its own, block by block, and reports every engine's rate and threads", async () => {
    const figures = await runDurable(2_000, 3_000, 500, [
      { name: "observations stored, state in memory", writerThread: false, stateInMemory: true },
    ]);
    expect(figures.observations).toBe(3_000);
    for (const rate of [figures.memoryRate, figures.durableRate, figures.storeRate, figures.variants[0]!.rate])
      expect(rate).toBeGreaterThan(0);
    expect(figures.variants.map((v) => v.name)).toEqual(["observations stored, state in memory"]);
    // Each engine's own process: its main thread is the engine's, its writer threads are told apart.
    expect(figures.memoryCpu.get("engine (main)")).toBeGreaterThan(0);
    expect(figures.durableCpu.get("engine (main)")).toBeGreaterThan(0);
    expect([...figures.durableCpu.keys()]).toContain("observation writer");
    expect([...figures.memoryCpu.keys()]).not.toContain("observation writer");
    expect(figures.durableBusy).toBeGreaterThan(0);
    expect(figures.durableBusy).toBeLessThanOrEqual(1.5);
  }, 120_000);
});
