/** Reads the Prometheus text of `/metrics` into what the health page draws. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

export function sum(samples: readonly Sample[], name: string): number {
  let total = 0;
  for (const s of samples) if (s.name === name) total += s.value;
  return total;
}

export interface HealthPoint {
  at: number;
  observationsPerSecond: number;
  outboxDepth: number;
  outboxOldestSeconds: number;
  deadLettersPerMinute: number;
  lagByPartition: Map<string, number>;
}

/** One point of the health charts from two scrapes `seconds` apart (counters become rates). */
export function healthPoint(
  previous: Sample[] | undefined,
  current: Sample[],
  seconds: number,
  at: number,
): HealthPoint {
  const rate = (name: string): number =>
    previous && seconds > 0 ? Math.max(0, (sum(current, name) - sum(previous, name)) / seconds) : 0;
  const lagByPartition = new Map<string, number>();
  for (const s of current) {
    if (s.name !== "dms_kafka_consumer_lag") continue;
    const key = `${s.labels.topic ?? ""}/${s.labels.partition ?? ""}`;
    lagByPartition.set(key, s.value);
  }
  return {
    at,
    observationsPerSecond: rate("dms_engine_observations_total"),
    outboxDepth: sum(current, "dms_actions_outbox_depth"),
    outboxOldestSeconds: sum(current, "dms_actions_outbox_oldest_pending_seconds"),
    deadLettersPerMinute: 60 * (rate("dms_engine_dead_letters_total") + rate("dms_actions_dead_letters")),
    lagByPartition,
  };
}
