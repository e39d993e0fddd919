/**
 * SVG charts of the benchmarks' main series, beside bench/RESULTS.md: perf engineers read a curve
 * faster than a table. Each benchmark that has a series records its figures with `recordFigures`
 * (bench/figures.json, one entry per benchmark, the numbers its RESULTS.md tables print) and the
 * charts are drawn again from all recorded figures, so a benchmark run alone redraws its charts and
 * keeps the others'. `npx tsx bench/charts.ts` redraws them from bench/figures.json.
 *
 * Hand-written SVG (lines, bars, text): three chart shapes do not justify a plotting dependency, and
 * the output is plain text that diffs and renders on GitHub.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const FIGURES_FILE = join(HERE, "figures.json");
export const CHARTS_DIR = join(HERE, "charts");

export interface EngineFigures {
  date: string;
  /** `uptime`'s load averages during the run. */
  load: string;
  observations: number;
  decodeRate: number;
  engineRate: number;
  durableRate: number;
  /** The in-memory engine on the durable run's observations (its fair comparison); absent in older figures. */
  durableMemoryRate?: number;
  /** Rows stored per second by the observation store path alone. */
  storeRate?: number;
  jsonRulesEngineRate: number;
  /** The JVM CEP peer and dms on the same sample of observations, in the same run. */
  peer?: { name: string; observations: number; rate: number; dmsRate: number };
  /** Engine rate by rules per thing type. */
  sweep: { rulesPerType: number; rate: number; decodeRate: number }[];
}

export interface KafkaFigures {
  date: string;
  load: string;
  rawKafkajsRate: number;
  rawPlatformaticRate: number;
  engineRate: number;
  durableRate: number;
  /** The same engines fed the same messages in process, with no broker. */
  inProcessRate?: number;
  durableInProcessRate?: number;
  /** The Kafka Streams peer on the same topic, each run against dms with the same durability in the same run. */
  streams?: { store: "memory" | "durable"; threads: number; rate: number; dmsRate: number }[];
  /** Produce-to-sink latency (ms) at each offered rate (observations/s). */
  latency: { rate: number; samples: number; p50: number; p90?: number; p99: number; p999?: number; max: number }[];
}

export interface Figures {
  engine?: EngineFigures;
  kafka?: KafkaFigures;
}

/** Stores one benchmark's figures in bench/figures.json and redraws every chart. */
export function recordFigures<K extends keyof Figures>(area: K, figures: NonNullable<Figures[K]>): string[] {
  const all = readFigures();
  all[area] = figures;
  writeFileSync(FIGURES_FILE, `${JSON.stringify(all, null, 2)}\n`);
  return writeCharts(all);
}

export function readFigures(): Figures {
  return existsSync(FIGURES_FILE) ? (JSON.parse(readFileSync(FIGURES_FILE, "utf8")) as Figures) : {};
}

/** Writes the charts the figures allow into `dir`; returns the files written. */
export function writeCharts(figures: Figures = readFigures(), dir = CHARTS_DIR): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const put = (name: string, svg: string): void => {
    const file = join(dir, name);
    writeFileSync(file, svg);
    written.push(file);
  };
  const { engine, kafka } = figures;
  if (engine && engine.sweep.length > 0) {
    put(
      "engine-rules.svg",
      lineChart({
        title: "bench/engine: observations/s by rules per thing type",
        subtitle: `${engine.date}, load ${engine.load}`,
        xLabel: "rules per thing type (log scale)",
        yLabel: "observations/s",
        logX: true,
        series: [
          { name: "JSON.parse alone (interleaved)", points: engine.sweep.map((p) => [p.rulesPerType, p.decodeRate]) },
          { name: "dms engine", points: engine.sweep.map((p) => [p.rulesPerType, p.rate]) },
        ],
      }),
    );
  }
  if (kafka && kafka.latency.length > 0) {
    const byRate = [...kafka.latency].sort((a, b) => a.rate - b.rate);
    put(
      "kafka-latency.svg",
      lineChart({
        title: "bench/kafka: produce -> action handed to the sink",
        subtitle: `${kafka.date}, load ${kafka.load}`,
        xLabel: "offered observations/s",
        yLabel: "ms",
        logX: false,
        series: (["p50", "p90", "p99", "max"] as const).map((p) => ({
          name: p,
          // A percentile an older run did not record is left out of its line.
          points: byRate.map((l): [number, number] => [l.rate, l[p] ?? NaN]),
        })),
      }),
    );
  }
  const ratios = ratioBars(figures);
  if (ratios.length > 0) {
    put(
      "ratios.svg",
      barChart({
        title: "dms against every reference (ratio of observations/s, log scale)",
        subtitle: [
          engine && `engine ${engine.date}, load ${engine.load}`,
          kafka && `kafka ${kafka.date}, load ${kafka.load}`,
        ]
          .filter(Boolean)
          .join("; "),
        bars: ratios,
      }),
    );
  }
  return written;
}

function ratioBars(f: Figures): { label: string; value: number }[] {
  const out: { label: string; value: number }[] = [];
  const e = f.engine;
  if (e) {
    out.push({ label: "engine / JSON.parse alone", value: e.engineRate / e.decodeRate });
    out.push({ label: "durable engine / engine", value: e.durableRate / (e.durableMemoryRate ?? e.engineRate) });
    out.push({ label: "engine / json-rules-engine", value: e.engineRate / e.jsonRulesEngineRate });
    if (e.peer) out.push({ label: `engine / ${e.peer.name} (same sample)`, value: e.peer.dmsRate / e.peer.rate });
  }
  const k = f.kafka;
  if (k) {
    out.push({ label: "kafka: engine / raw kafkajs consumer", value: k.engineRate / k.rawKafkajsRate });
    out.push({ label: "kafka: durable engine / raw kafkajs", value: k.durableRate / k.rawKafkajsRate });
    out.push({ label: "kafka: engine / raw @platformatic/kafka", value: k.engineRate / k.rawPlatformaticRate });
    for (const s of k.streams ?? [])
      out.push({
        label: `kafka: ${s.store === "durable" ? "durable engine" : "engine"} / Kafka Streams ${s.store === "durable" ? "RocksDB" : "in-memory"}, ${s.threads} thread${s.threads > 1 ? "s" : ""}`,
        value: s.dmsRate / s.rate,
      });
  }
  return out.filter((b) => Number.isFinite(b.value) && b.value > 0);
}

// ---- drawing ----

const W = 720;
const H = 420;
const M = { left: 80, right: 24, top: 64, bottom: 56 };
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];
const FONT = 'font-family="system-ui, sans-serif"';

interface LineChart {
  title: string;
  subtitle: string;
  xLabel: string;
  yLabel: string;
  logX: boolean;
  series: { name: string; points: [number, number][] }[];
}

export function lineChart(c: LineChart): string {
  const xs = c.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = c.series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const yMax = niceCeil(Math.max(...ys, 0));
  const fx = c.logX ? (x: number): number => Math.log10(x) : (x: number): number => x;
  const px = (x: number): number =>
    M.left + (x1 === x0 ? 0.5 : (fx(x) - fx(x0)) / (fx(x1) - fx(x0))) * (W - M.left - M.right);
  const py = (y: number): number => H - M.bottom - (y / yMax) * (H - M.top - M.bottom);
  const parts = [frame(c.title, c.subtitle)];
  for (let i = 0; i <= 5; i++) {
    const y = (yMax * i) / 5;
    parts.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${r(py(y))}" y2="${r(py(y))}" stroke="#ddd"/>`,
      text(M.left - 6, py(y) + 4, short(y), "end"),
    );
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    parts.push(
      `<line x1="${r(px(x))}" x2="${r(px(x))}" y1="${M.top}" y2="${H - M.bottom}" stroke="#eee"/>`,
      text(px(x), H - M.bottom + 16, short(x), "middle"),
    );
  }
  parts.push(axes(c.xLabel, c.yLabel));
  c.series
    .filter((s) => s.points.some((p) => Number.isFinite(p[1])))
    .forEach((s, i) => {
      const colour = COLOURS[i % COLOURS.length]!;
      const pts = s.points.filter((p) => Number.isFinite(p[1]));
      parts.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${pts.map((p) => `${r(px(p[0]))},${r(py(p[1]))}`).join(" ")}"/>`,
        ...pts.map(
          (p) =>
            `<circle cx="${r(px(p[0]))}" cy="${r(py(p[1]))}" r="3.5" fill="${colour}"><title>${esc(s.name)}: ${short(p[1])} at ${short(p[0])}</title></circle>`,
        ),
        `<rect x="${M.left + 10}" y="${M.top + 8 + i * 18}" width="12" height="3" fill="${colour}"/>`,
        text(M.left + 28, M.top + 13 + i * 18, s.name, "start"),
      );
    });
  return svg(parts);
}

interface BarChart {
  title: string;
  subtitle: string;
  bars: { label: string; value: number }[];
}

/** Horizontal bars on a log scale around 1.0 (a ratio below 1 extends left of the line). */
export function barChart(c: BarChart): string {
  const left = 290;
  const row = 30;
  const height = M.top + c.bars.length * row + M.bottom;
  const logs = c.bars.map((b) => Math.log10(b.value));
  const lo = Math.floor(Math.min(0, ...logs));
  const hi = Math.ceil(Math.max(0, ...logs));
  const span = Math.max(1, hi - lo);
  const px = (v: number): number => left + ((v - lo) / span) * (W - left - M.right - 50);
  const parts = [frame(c.title, c.subtitle, height)];
  for (let e = lo; e <= hi; e++) {
    parts.push(
      `<line x1="${r(px(e))}" x2="${r(px(e))}" y1="${M.top - 4}" y2="${height - M.bottom + 4}" stroke="${e === 0 ? "#333" : "#ddd"}"/>`,
      text(px(e), height - M.bottom + 20, short(10 ** e), "middle"),
    );
  }
  c.bars.forEach((b, i) => {
    const y = M.top + i * row;
    const [a, z] = [px(0), px(logs[i]!)];
    const colour = b.value >= 1 ? COLOURS[2]! : COLOURS[1]!;
    parts.push(
      text(left - 8, y + row / 2 + 4, b.label, "end"),
      `<rect x="${r(Math.min(a, z))}" y="${y + 5}" width="${r(Math.max(1, Math.abs(z - a)))}" height="${row - 10}" fill="${colour}"><title>${esc(b.label)}: ${ratio(b.value)}</title></rect>`,
      text(Math.max(a, z) + 6, y + row / 2 + 4, ratio(b.value), "start"),
    );
  });
  return svg(parts, height);
}

function frame(title: string, subtitle: string, height = H): string {
  return [
    `<rect width="${W}" height="${height}" fill="#fff"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="600" ${FONT}>${esc(title)}</text>`,
    `<text x="${W / 2}" y="44" text-anchor="middle" font-size="12" fill="#555" ${FONT}>${esc(subtitle)}</text>`,
  ].join("\n");
}

function axes(xLabel: string, yLabel: string): string {
  return [
    `<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#333"/>`,
    `<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#333"/>`,
    text((M.left + W - M.right) / 2, H - 14, xLabel, "middle"),
    `<text transform="translate(18 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle" font-size="12" ${FONT}>${esc(yLabel)}</text>`,
  ].join("\n");
}

function svg(parts: string[], height = H): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}">\n${parts.join("\n")}\n</svg>\n`;
}

function text(x: number, y: number, s: string, anchor: "start" | "middle" | "end"): string {
  return `<text x="${r(x)}" y="${r(y)}" text-anchor="${anchor}" font-size="12" ${FONT}>${esc(s)}</text>`;
}

const r = (n: number): string => n.toFixed(1);
const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** 1,250,000 -> "1.25M", 45,000 -> "45k", 0.25 -> "0.25". */
function short(n: number): string {
  const a = Math.abs(n);
  if (a >= 1e6) return `${+(n / 1e6).toPrecision(3)}M`;
  if (a >= 1e3) return `${+(n / 1e3).toPrecision(3)}k`;
  return `${+n.toPrecision(3)}`;
}

function ratio(v: number): string {
  return v >= 10 ? `${Math.round(v)}x` : `${v.toFixed(2)}x`;
}

/** The next 1, 2 or 5 times a power of ten at or above n. */
function niceCeil(n: number): number {
  if (n <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const f of writeCharts()) console.log(f);
}
