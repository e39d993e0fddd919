import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { TEMPLATE_CACHE_MAX, template, templateCacheSize } from "../../src/actions/index.js";
import { GENERATED_CACHE_MAX, compileRule, generatedCacheSize } from "../../src/engine/index.js";
import { distinctRule } from "../../bench/caches/workload.js";

// Issue 14, finding 6: 60,000 dry runs with distinct expressions grew RSS from 451 to 764 MB, never
// released: the generated-function cache kept every text. Every cache is now an LRU with a bound
// (docs/engine.md, "Caches"); this runs the compile path 100,000 times with distinct expressions.

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const scope = { observation: { temp: 3 }, thing: { thingName: "t1" } };

describe("caches keyed by user input stay at their bound", () => {
  it("100,000 distinct rule expressions and templates: caches at their bound, heap flat after GC", () => {
    const TOTAL = 100_000;
    const WARM = 20_000; // past both bounds, so the caches are full from here on
    let base = 0;
    for (let i = 0; i < TOTAL; i++) {
      compileRule(distinctRule(i));
      const rendered = template(`t${i} \${observation.temp * ${i}}`).render(scope, () => undefined);
      if (i === 5) expect(rendered).toBe("t5 15");
      if (i === WARM) base = heapAfterGc();
    }
    expect(generatedCacheSize()).toBe(GENERATED_CACHE_MAX);
    expect(templateCacheSize()).toBe(TEMPLATE_CACHE_MAX);
    const grown = heapAfterGc() - base;
    // 80,000 more distinct expressions after the caches filled: without eviction they kept
    // ~5 KB each (400 MB); with it the heap stays within noise of where it was.
    expect(grown).toBeLessThan(16 * 1024 * 1024);
  }, 300_000);
});
