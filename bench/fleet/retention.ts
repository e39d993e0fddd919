/**
 * bench/fleet, retention: the engine's rate (observations stored and evaluated per second, through
 * `EngineService.accept` as the embedded sources hand them over, chunks of CHUNK) with the retention
 * sweeper deleting on the same database and event loop, against the rate without it, in alternating
 * phases of one run. Before the phases, observations older than the window are stored, enough for
 * the sweeper to have a backlog through every "with" phase: the worst case, the sweeper deleting
 * batch after batch (a steady state deletes per sweep what aged out since the last one). Also the
 * disk one million observations of this workload take (database file + WAL, after a checkpoint).
 */
import { mkdtempSync, rmSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pino from "pino";
import { loadConfig } from "../../src/config/index.js";
import { decodeMessages, type RawObservation } from "../../src/engine/index.js";
import { OBSERVATIONS_FILE, partitionTable } from "../../src/observations/index.js";
import { retentionTargets } from "../../src/retention.js";
import { startDms } from "../../src/service.js";
import { RetentionSweeper } from "../../src/store/index.js";
import { median, progress, writeProvision } from "./support.js";

const CHUNK = 1000;
const THINGS = 1000;
const DAY = 86_400_000;
const WINDOW = "30d";

interface Row {
  phase: "without" | "with";
  round: number;
  rate: number;
  deleted: number;
}

export async function retentionSection(old: number, seconds: number, rounds: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-retention-"));
  const names = Array.from({ length: THINGS }, (_, i) => `ret-${i}`);
  writeProvision(
    join(dir, "provision.json"),
    names.map((thingName) => ({ thingName, thingType: "sensor", domain: "fleet" })),
  );
  const dataDir = join(dir, "data");
  const config = loadConfig({
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: join(dir, "provision.json"),
    DMS_ROLES: "engine",
    DMS_LOG_LEVEL: "warn",
    DMS_OBSERVATION_RETENTION: WINDOW,
  });
  const dms = await startDms(config, { logger: pino({ level: "warn" }) });
  const engine = dms.services.engine!;
  // The observations' own file, written by the engine's writer thread: measured and counted here.
  const db = new Database(join(dataDir, OBSERVATIONS_FILE));
  db.pragma("busy_timeout = 5000");
  let sequence = 0;
  const chunk = (ts: (i: number) => number): RawObservation[] =>
    Array.from({ length: CHUNK }, () => {
      const i = sequence++;
      const value = JSON.stringify({ thingName: names[i % THINGS], timestamp: ts(i), state: { temp: 20 + (i % 17) } });
      return { key: null, value: Buffer.from(value), position: { source: "bench" } };
    });
  const feed = async (raws: RawObservation[]): Promise<void> => {
    await engine.accept(decodeMessages(raws));
    // A source waits on the network between batches: the sweeper's timers get their turn.
    await new Promise((r) => setImmediate(r));
  };
  const disk = (): number => [db.name, `${db.name}-wal`].filter(existsSync).reduce((a, f) => a + statSync(f).size, 0);
  try {
    progress(`data file ${db.name}`);
    // Old observations, 60 to 31 days back in the order they were taken: all past the window.
    db.pragma("wal_checkpoint(TRUNCATE)");
    const before = statSync(db.name).size;
    const now = Date.now();
    for (let n = 0; n < old; n += CHUNK) {
      await feed(chunk((i) => now - 60 * DAY + Math.floor((i * 29 * DAY) / old)));
      if (n % 200_000 === 0)
        progress(`old observations stored: ${n.toLocaleString("en")} of ${old.toLocaleString("en")}`);
    }
    db.pragma("wal_checkpoint(TRUNCATE)");
    const perMillion = ((statSync(db.name).size - before) / old) * 1e6;
    progress(`disk: ${(perMillion / 2 ** 20).toFixed(0)} MiB per million observations`);

    const sweeper = new RetentionSweeper({
      targets: retentionTargets(config, dms.services.stores),
      clock: Date.now,
      logger: pino({ level: "warn" }),
    });
    const count = {
      get: (cutoff: number): { n: number } => {
        let n = 0;
        for (const { day } of db.prepare<[], { day: number }>("SELECT day FROM observation_partitions").all()) {
          const table = partitionTable(day);
          n += db.prepare<[number], { n: number }>(`SELECT count(*) AS n FROM ${table} WHERE ts < ?`).get(cutoff)!.n;
        }
        return { n };
      },
    };
    const rows: Row[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const phase of round % 2 ? (["without", "with"] as const) : (["with", "without"] as const)) {
        const oldBefore = count.get(now - 30 * DAY)!.n;
        if (phase === "with") await sweeper.start();
        const t0 = performance.now();
        let stored = 0;
        while (performance.now() - t0 < seconds * 1000) {
          await feed(chunk(() => Date.now()));
          stored += CHUNK;
        }
        const rate = stored / ((performance.now() - t0) / 1000);
        if (phase === "with") await sweeper.stop();
        const deleted = oldBefore - count.get(now - 30 * DAY)!.n;
        progress(`${phase} retention, round ${round}: ${Math.round(rate)} obs/s, ${deleted} old rows deleted`);
        rows.push({ phase, round, rate, deleted });
      }
    }
    return report(rows, old, seconds, perMillion, disk());
  } finally {
    db.close();
    await dms.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(rows: Row[], old: number, seconds: number, perMillion: number, total: number): string {
  const ratios = rows
    .filter((r) => r.phase === "with")
    .map((r) => r.rate / rows.find((w) => w.phase === "without" && w.round === r.round)!.rate);
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  return [
    `One dms process (role engine; no Kafka), ${THINGS.toLocaleString("en")} things of one type, no rules; observations \`{thingName, timestamp, state: {temp}}\` handed to \`EngineService.accept\` in chunks of ${CHUNK.toLocaleString("en")} (stored in the observations' day partitions by the writer thread, state flushed per chunk), ${seconds} s per phase. ${old.toLocaleString("en")} observations older than the window (DMS_OBSERVATION_RETENTION=${WINDOW}) stored first, over 29 days; in the "with" phases the sweeper deletes them: each day wholly past the window is dropped as a table, the rows of the day the cutoff cuts are deleted in batches of 1,000 (then a pause at least as long), all on the observation writer's thread.`,
    "",
    "| phase | round | engine rate (obs/s) | old rows deleted meanwhile |",
    "|---|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.phase} retention | ${r.round} | ${Math.round(r.rate).toLocaleString("en")} | ${r.deleted.toLocaleString("en")} |`,
    ),
    "",
    `Rate with deletion / without, per round: ${ratios.map((x) => x.toFixed(2)).join(", ")}; median **${median(ratios).toFixed(2)}** (target ≥ 0.9).`,
    "",
    `Disk: **${mib(perMillion)} MiB per million observations** of this workload (observation file growth after a checkpoint, indexes included: the (thing_type, ts) and ts indexes, and the (thing_name, ts) index each closed day gets); the data dir held ${mib(total)} MiB at the end.`,
  ].join("\n");
}
