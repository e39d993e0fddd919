import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time of this process's threads by what they do, from /proc (Linux): the durable engine's
 * cost is spread over the engine's thread, the stores' writer threads, the WAL checkpointers and
 * V8's helper threads (GC), which share the machine's cores, so a rate alone does not say whose
 * work grew. Node gives every thread the same name: a thread is told by when it appeared (a
 * worker's OS thread is made inside `new Worker`), as `label` records. Empty where /proc is not.
 */
export class ThreadCpu {
  /** Label by thread id. */
  private readonly labels = new Map<number, string>();

  constructor() {
    for (const tid of tids()) this.labels.set(tid, tid === process.pid ? "engine (main)" : "V8/libuv helpers");
  }

  /** Runs `make`; the threads it starts are named `names` in the order made (more than that: the last name). */
  label<T>(names: readonly string[], make: () => T): T {
    const before = new Set(tids());
    const made = make();
    this.name(names, before);
    return made;
  }

  /** Names the threads started since `label`/`labelNew` last looked that have no name yet (a thread started lazily). */
  labelNew(name: string): void {
    this.name([name], new Set(this.labels.keys()));
  }

  private name(names: readonly string[], known: ReadonlySet<number>): void {
    const added = tids()
      .filter((t) => !known.has(t) && !this.labels.has(t))
      .sort((a, b) => a - b);
    added.forEach((tid, i) => this.labels.set(tid, names[Math.min(i, names.length - 1)]!));
  }

  /** CPU seconds of each thread alive now (a thread that ended between the listing and the read: 0). */
  snapshot(): Map<number, number> {
    const out = new Map<number, number>();
    for (const tid of tids()) out.set(tid, statCpuSeconds(`/proc/self/task/${tid}/stat`));
    return out;
  }

  /** CPU seconds by label between two snapshots, added into `into` (threads not labelled count as "other"). */
  add(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>, into: Map<string, number>): void {
    for (const [tid, seconds] of after) {
      const label = this.labels.get(tid) ?? "other";
      into.set(label, (into.get(label) ?? 0) + seconds - (before.get(tid) ?? 0));
    }
  }
}

/** CPU seconds of another process (the Kafka broker's JVM), 0 when it cannot be read. */
export function processCpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** User and system CPU seconds in a /proc `stat` file of a process or thread; 0 when it cannot be read. */
export function statCpuSeconds(path: string): number {
  try {
    const stat = readFileSync(path, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** "label a.b µs" per observation, largest first, and the total. */
export function perObservation(cpu: ReadonlyMap<string, number>, observations: number): string {
  const rows = [...cpu].filter(([, s]) => s > 0).sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, s]) => sum + s, 0);
  return [`total ${((1e6 * total) / observations).toFixed(2)}`]
    .concat(rows.map(([label, s]) => `${label} ${((1e6 * s) / observations).toFixed(2)}`))
    .join(", ")
    .concat(" µs/obs");
}

function tids(): number[] {
  try {
    return readdirSync("/proc/self/task").map(Number);
  } catch {
    return [];
  }
}
