import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEMPLATE_CACHE_MAX, TEMPLATE_CACHE_MAX_BYTES, template, templateCacheSize } from "../../src/actions/index.js";
import {
  GENERATED_CACHE_MAX,
  GENERATED_CACHE_MAX_BYTES,
  EXPRESSION_MAX_LENGTH,
  compileRule,
  generatedCacheSize,
} from "../../src/engine/index.js";
import { distinctDryRun, distinctRule } from "../../bench/caches/workload.js";
import { startTestDms, type TestDms } from "../support/dms.js";

// Every cache keyed by input is an LRU bounded by entries and by estimated bytes (docs/engine.md,
// "Caches"): a stream of distinct expressions, short or as long as allowed, cannot grow the process.

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const MB = 1024 * 1024;
const scope = { observation: { temp: 3 }, thing: { thingName: "t1" } };

describe("caches keyed by user input stay at their bound", () => {
  it("100,000 distinct short rule expressions and templates: the entry bounds hold, heap flat after GC", () => {
    const TOTAL = 100_000;
    const WARM = 20_000; // past both bounds, so the caches are full from here on
    let base = 0;
    for (let i = 0; i < TOTAL; i++) {
      compileRule(distinctRule(i));
      const rendered = template(`t${i} \${observation.temp * ${i}}`).render(scope, () => undefined);
      if (i === 5) expect(rendered).toBe("t5 15");
      if (i === WARM) base = heapAfterGc();
    }
    // Full: at the entry bound, or just under it where the byte bound stops it first.
    expect(generatedCacheSize().entries).toBeLessThanOrEqual(GENERATED_CACHE_MAX);
    expect(generatedCacheSize().entries).toBeGreaterThan(GENERATED_CACHE_MAX * 0.9);
    expect(templateCacheSize().entries).toBe(TEMPLATE_CACHE_MAX);
    // 80,000 more distinct expressions after the caches filled: without eviction they kept
    // ~5 KB each (400 MB); with it the heap stays within noise of where it was.
    expect(heapAfterGc() - base).toBeLessThan(16 * MB);
  }, 300_000);
});

describe("dry runs with the longest expressions allowed", () => {
  let t: TestDms;
  beforeAll(async () => {
    t = await startTestDms();
  });
  afterAll(() => t.close());

  it("are bounded by bytes: the caches stop below their byte bound, well under the entry bound, heap flat", () => {
    const alice = t.dms.services.identity.principal("alice")!;
    const run = (i: number): void => {
      const { body, observations } = distinctDryRun(i, EXPRESSION_MAX_LENGTH - 10);
      expect(t.dms.services.rules.test(alice, body, observations).triggeredCount).toBe(1);
    };
    const TOTAL = 5_000;
    const WARM = 2_000; // past both byte bounds
    for (let i = 0; i < WARM; i++) run(i);
    const base = heapAfterGc();
    const atWarm = { generated: generatedCacheSize(), templates: templateCacheSize() };
    for (let i = WARM; i < TOTAL; i++) run(i);
    const generated = generatedCacheSize();
    const templates = templateCacheSize();
    // The byte bounds are what stop them: entries far below the entry bounds, bytes at their bound.
    expect(generated.bytes).toBeLessThanOrEqual(GENERATED_CACHE_MAX_BYTES);
    expect(generated.bytes).toBeGreaterThan(GENERATED_CACHE_MAX_BYTES * 0.9);
    expect(generated.entries).toBeLessThan(GENERATED_CACHE_MAX / 2);
    expect(templates.bytes).toBeLessThanOrEqual(TEMPLATE_CACHE_MAX_BYTES);
    expect(templates.bytes).toBeGreaterThan(TEMPLATE_CACHE_MAX_BYTES * 0.9);
    expect(templates.entries).toBeLessThan(TEMPLATE_CACHE_MAX / 2);
    expect(atWarm.generated.bytes).toBeGreaterThan(GENERATED_CACHE_MAX_BYTES * 0.9);
    // 3,000 more distinct dry runs, ~35 KB of code each, after the caches filled: the heap stays.
    expect(heapAfterGc() - base).toBeLessThan(16 * MB);
  }, 300_000);
});
