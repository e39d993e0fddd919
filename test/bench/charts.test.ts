import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { writeCharts, type Figures } from "../../bench/charts.js";

const figures: Figures = {
  engine: {
    date: "2026-11-24T08:00:00Z",
    load: "1.00, 1.00, 1.00",
    observations: 2_000_000,
    decodeRate: 500_000,
    engineRate: 125_000,
    durableRate: 50_000,
    jsonRulesEngineRate: 500,
    peer: { name: "Esper 9.0.0", observations: 300_000, rate: 5_000, dmsRate: 100_000 },
    sweep: [10, 100, 1000].map((rulesPerType, i) => ({ rulesPerType, rate: 300_000 / (i + 1), decodeRate: 500_000 })),
  },
  kafka: {
    date: "2026-11-24T08:10:00Z",
    load: "2.00, 2.00, 2.00",
    rawKafkajsRate: 400_000,
    rawPlatformaticRate: 200_000,
    engineRate: 100_000,
    durableRate: 40_000,
    latency: [10_000, 2_000].map((rate) => ({ rate, samples: rate * 10, p50: 2, p90: 5, p99: 9, max: 30 })),
  },
};

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("bench/charts", () => {
  it("draws each main series from the figures, one mark per figure", () => {
    dir = mkdtempSync(join(tmpdir(), "dms-charts-"));
    const files = writeCharts(figures, dir);
    expect(files.map((f) => basename(f)).sort()).toEqual(["engine-rules.svg", "kafka-latency.svg", "ratios.svg"]);
    const rules = readFileSync(join(dir, "engine-rules.svg"), "utf8");
    expect(rules.match(/<circle /g)).toHaveLength(6); // 3 points x (engine, JSON.parse)
    expect(rules).toContain("dms engine: 150k at 100");
    const latency = readFileSync(join(dir, "kafka-latency.svg"), "utf8");
    expect(latency.match(/<circle /g)).toHaveLength(8); // 2 rates x (p50, p90, p99, max)
    expect(latency).toContain("p99: 9 at 10k");
    const ratios = readFileSync(join(dir, "ratios.svg"), "utf8");
    const bars = [...ratios.matchAll(/<title>([^<]+)<\/title><\/rect>/g)].map((m) => m[1]);
    expect(bars).toEqual([
      "engine / JSON.parse alone: 0.25x",
      "durable engine / engine: 0.40x",
      "engine / json-rules-engine: 250x",
      "engine / Esper 9.0.0 (same sample): 20x",
      "kafka: engine / raw kafkajs consumer: 0.25x",
      "kafka: durable engine / raw kafkajs: 0.10x",
      "kafka: engine / raw @platformatic/kafka: 0.50x",
    ]);
    for (const svg of [rules, latency, ratios])
      expect(svg.trim()).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^]*<\/svg>$/);
  });

  it("draws only what was measured", () => {
    dir = mkdtempSync(join(tmpdir(), "dms-charts-"));
    const { kafka } = figures;
    expect(writeCharts({ kafka }, dir).map((f) => basename(f))).toEqual(["kafka-latency.svg", "ratios.svg"]);
    expect(writeCharts({}, dir)).toEqual([]);
  });
});
