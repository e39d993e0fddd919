/**
 * bench/fleet, provisioning: a file of N things applied at start, without
 * secrets, with generated secrets and with chosen (operator-supplied) ones,
 * each on a fresh data dir; then a
 * restart with the unchanged file. Times are the dms process's own, from its
 * start to /healthz answering (listening) and to /readyz 200 (provisioned and
 * started), so that module loading of the child is the same in every row.
 * With `postgres`, every fresh data dir gets a PostgreSQL database of its own
 * (DMS_DATABASE_URL, on the server of DMS_TEST_PG_URL), dropped at the end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPgDatabase, type PgDatabase } from "../../test/support/postgres.js";
import { child, progress, request, secretOf, serviceEnv, stop, writeProvision, type ThingEntry } from "./support.js";

interface Started {
  ms: number;
  work: { keyed: number; pbkdf2: number; kdf: number; cacheHits: number };
}

interface Row {
  run: string;
  listeningMs: number;
  readyMs: number;
  work: Started["work"];
}

/** Where a run keeps its stores: its data dir alone, or with a PostgreSQL database of its own. */
export type Backend = "sqlite" | "postgres";

async function startOnce(run: string, dataDir: string, file: string, databaseUrl?: string): Promise<Row> {
  const env = serviceEnv(dataDir, file, "api");
  const proc = child("service.ts", databaseUrl === undefined ? env : { ...env, DMS_DATABASE_URL: databaseUrl });
  try {
    const listening = request<{ ms: number }>(proc, undefined, "listening");
    const started = await request<Started>(proc, undefined, "started");
    const row = { run, listeningMs: (await listening).ms, readyMs: started.ms, work: started.work };
    progress(`${run}: listening ${row.listeningMs.toFixed(0)} ms, ready ${row.readyMs.toFixed(0)} ms`);
    return row;
  } finally {
    await stop(proc);
  }
}

export async function provisioningSection(
  things: number,
  rounds: number,
  backend: Backend = "sqlite",
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-fleet-"));
  const databases = new Map<string, PgDatabase>();
  /** Starts dms on `dataDir` (and, on PostgreSQL, the database that goes with it). */
  const start = async (run: string, dataDir: string, file: string): Promise<Row> => {
    if (backend === "sqlite") return startOnce(run, dataDir, file);
    let database = databases.get(dataDir);
    if (!database) databases.set(dataDir, (database = await createPgDatabase([])));
    return startOnce(run, dataDir, file, database.url);
  };
  try {
    const plain: ThingEntry[] = Array.from({ length: things }, (_, i) => ({
      thingName: `dev-${i}`,
      thingType: "sensor",
      domain: "fleet",
      serial: `SN-${i}`,
    }));
    writeProvision(join(dir, "plain.json"), plain);
    writeProvision(
      join(dir, "secrets.json"),
      plain.map((t) => ({ ...t, secret: secretOf("generated") })),
    );
    writeProvision(
      join(dir, "chosen.json"),
      plain.map((t) => ({ ...t, secret: secretOf("chosen") })),
    );
    // An empty file: what starting costs with nothing to provision, the base of every row.
    writeProvision(join(dir, "empty.json"), []);
    const rows: Row[] = [];
    for (let round = 1; round <= rounds; round++) {
      const fresh = (name: string) => mkdtempSync(join(dir, `${name}-${round}-`));
      rows.push(await start(`empty file (round ${round})`, fresh("empty"), join(dir, "empty.json")));
      rows.push(await start(`${things} things, no secrets (round ${round})`, fresh("plain"), join(dir, "plain.json")));
      const secretsDir = fresh("secrets");
      rows.push(
        await start(`${things} things, generated secrets (round ${round})`, secretsDir, join(dir, "secrets.json")),
      );
      rows.push(await start(`restart, file unchanged (round ${round})`, secretsDir, join(dir, "secrets.json")));
      rows.push(
        await start(`${things} things, chosen secrets (round ${round})`, fresh("chosen"), join(dir, "chosen.json")),
      );
    }
    return report(rows, things);
  } finally {
    await Promise.all([...databases.values()].map((d) => d.drop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(rows: Row[], things: number): string {
  const s = (ms: number) => (ms / 1000).toFixed(2);
  const lines = [
    "| run | /healthz answers after (s) | /readyz 200 after (s) | things/s | secrets hashed (HMAC / PBKDF2 / scrypt) |",
    "|---|---:|---:|---:|---:|",
    ...rows.map((r) => {
      const rate = r.run.startsWith("empty") ? "" : Math.round(things / (r.readyMs / 1000)).toLocaleString("en");
      return `| ${r.run} | ${s(r.listeningMs)} | ${s(r.readyMs)} | ${rate} | ${r.work.keyed} / ${r.work.pbkdf2} / ${r.work.kdf} |`;
    }),
  ];
  const ready = (prefix: string) => rows.filter((r) => r.run.startsWith(prefix)).map((r) => r.readyMs);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const empty = sum(ready("empty")) / ready("empty").length;
  const plain = sum(ready(`${things} things, no`));
  const secrets = sum(ready(`${things} things, generated`));
  const restart = sum(ready("restart"));
  const chosen = sum(ready(`${things} things, chosen`));
  const rounds = ready("empty").length;
  lines.push(
    "",
    `Ratio with generated secrets / without, to /readyz 200: **${(secrets / plain).toFixed(2)}** (over ${rounds} round(s); provisioning alone, less the empty file's start: ${((secrets - empty * rounds) / (plain - empty * rounds)).toFixed(2)}). Restart with the unchanged file / first start with secrets: **${(restart / secrets).toFixed(2)}**, no secret hashed again. Ratio with chosen (operator-supplied, 32 characters) secrets / without: **${(chosen / plain).toFixed(2)}** (provisioning alone: ${((chosen - empty * rounds) / (plain - empty * rounds)).toFixed(2)}).`,
  );
  return lines.join("\n");
}
