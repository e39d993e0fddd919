/** bench/engine's sub-table for the JVM CEP peer, and what each side computes that the other does not. */
import { fmt, table } from "../report.js";
import type { FormulationName } from "./formulations.js";
import type { PeerResult, PeerSkipped } from "./index.js";

export interface DmsOnSample {
  observations: number;
  rate: number;
  triggered: number;
}

type Run = PeerResult | (PeerSkipped & { formulation: FormulationName });

/** What each formulation deploys, in a line. */
const HOW: Record<FormulationName, string> = {
  statements:
    "one `match_recognize` statement per rule: `select * from Obs(thingType = ?, <a resource of the rule> is not null) match_recognize (partition by thingName pattern (A{3}) define A as <the rule's condition>)`, its constants as substitution parameters",
  "table-merge":
    "per condition shape a table of the rules' constants indexed by thing type, one join `Obs unidirectional, Rules` per shape inserting a verdict per (rule, thing) into `Eval`, the runs in a table keyed by (rule, thing) kept by one `on Eval merge Counts`",
  "table-merge-live":
    "as table-merge, but the join inserts a verdict only for a match or for a miss that ends a live run (`Counts[rule, thing]` in its where clause)",
  "window-merge": "as table-merge with the rules' constants in keep-all named windows instead of tables",
  "table-recognize":
    "the rules in tables as table-merge, the runs by one `match_recognize` partitioned by (rule, thing) per distinct threshold",
};

/** The fastest formulation whose firings equal dms's: the one the ratio is reported against. */
export function bestCorrect(runs: readonly Run[], dms: DmsOnSample): PeerResult | undefined {
  return runs
    .filter(
      (r): r is PeerResult => !("skipped" in r) && r.triggered === dms.triggered && r.observations === dms.observations,
    )
    .sort((a, b) => b.observations / b.seconds - a.observations / a.seconds)[0];
}

export function peerSection(runs: readonly Run[], dms: DmsOnSample): string {
  const lines = ["### Side by side with a JVM CEP engine (Esper)", ""];
  const done = runs.filter((r): r is PeerResult => !("skipped" in r));
  for (const r of runs)
    if ("skipped" in r) lines.push(`${r.formulation} did not run: ${"`"}${r.skipped.replace(/`/g, "'")}${"`"}`, "");
  const first = done[0];
  if (!first) return lines.join("\n");
  const best = bestCorrect(runs, dms);
  lines.push(
    `The first ${fmt(dms.observations)} observations of the workload (the same bytes, one JSON document a line), through Esper ${first.esper} on Java ${first.java} in a child JVM (\`bench/engine/peer/\`, built by Maven; ParallelGC, ${"`"}-Xmx${process.env.ESPER_PEER_HEAP ?? "6g"}${"`"}) once per formulation, and through a fresh dms engine in this process right before them. Geofences are single-row functions (\`inPolygon\`, \`inPoi\`: dms's formulas in Java). Timed on the JVM: parsing each line (Jackson's streaming parser), the thing lookup, the merge into the thing's state and Esper's evaluation, after compile and deploy. A formulation counts only if its firings equal dms's.`,
    "",
    table(
      ["run", "statements", "observations/s", "CPU-time obs/s", "second half obs/s", "firings", "dms / this"],
      [
        ["dms engine (same sample)", "", fmt(dms.rate), "", "", fmt(dms.triggered), "1.00x"],
        ...done.map((r) => [
          `Esper: ${r.formulation}${r === best ? " (best correct)" : ""}`,
          fmt(r.statements),
          fmt(r.observations / r.seconds),
          fmt(r.observations / r.cpuSeconds),
          fmt(r.observations / 2 / r.secondHalfSeconds),
          r.triggered === dms.triggered ? `${fmt(r.triggered)} (equal)` : `${fmt(r.triggered)} (DIFFER)`,
          `${(dms.rate / (r.observations / r.seconds)).toFixed(1)}x`,
        ]),
      ],
    ),
    "",
    table(
      ["formulation", "what it deploys", "compile / deploy + load", "heap after"],
      done.map((r) => [
        r.formulation,
        HOW[r.formulation],
        `${r.compileSeconds.toFixed(1)} s / ${r.deploySeconds.toFixed(1)} s`,
        `${fmt(r.heapMiB)} MiB`,
      ]),
    ),
    "",
    best
      ? `dms / Esper's best correct formulation (${best.formulation}): **${(dms.rate / (best.observations / best.seconds)).toFixed(1)}x**.`
      : "No formulation's firings equal dms's: no ratio is reported.",
    "",
    PEER_NOTES,
  );
  return lines.join("\n");
}

/** What the translation keeps, and where the two differ (the same on this workload, not in general). */
export const PEER_NOTES = [
  "What the statements compute, against dms's rules:",
  "",
  "| | dms | Esper statements here |",
  "| --- | --- | --- |",
  "| threshold | `count` consecutive matching observations of the thing, then a fresh start | `match_recognize` `A{count}` partitioned by thing (or by rule and thing), skip past last row, or a run row per (rule, thing) that a match extends and a miss removes: the same |",
  "| observation without the rule's resources | neither matches nor resets (docs/engine.md, Partial observations) | kept out by the stream filter (`<resource> is not null`), so the pattern does not see it: the same, except that dms counts a resource sent as `null` as carried and Esper as absent |",
  "| `thing.state.*` | the thing's merged state before this observation, kept by the engine | kept by the Java harness in a `HashMap` and put on the event (`prevTemp`, ...): Esper has no per-key merged state of its own short of a table and an `on ... merge` statement ordered after every rule |",
  "| resources | any name, types checked against the thing type, nested objects `<type>.<resource>` | a fixed event class (temp, hum, press, status, latlng): a new resource is a new field and a rebuild |",
  "| rule index | constants in sorted arrays per resource, geofences in a grid: an observation meets the rules it can match | the thing type is an index (the filter service's, or the rule table's); every condition of the type's rules runs for every observation, geofence functions included |",
  "| interval, actions, durability | `threshold.interval`, actions with idempotency keys, state flushed to SQLite | not translated: a listener counts the matches; Esper's state is in memory only |",
  "| what Esper adds | | windows, joins, time-based patterns (`A B* C within 5 min`), aggregation over a window, output rate limiting: none of them is a dms rule |",
].join("\n");
