/** bench/engine's sub-table for the JVM CEP peer, and what each side computes that the other does not. */
import { fmt, table } from "../report.js";
import type { PeerResult, PeerSkipped } from "./index.js";

export interface DmsOnSample {
  observations: number;
  rate: number;
  triggered: number;
}

export function peerSection(peer: PeerResult | PeerSkipped, dms: DmsOnSample): string {
  const lines = ["### Side by side with a JVM CEP engine (Esper)", ""];
  if ("skipped" in peer) {
    lines.push(`The peer did not run: ${"`"}${peer.skipped.replace(/`/g, "'")}${"`"}`);
    return lines.join("\n");
  }
  const same = peer.triggered === dms.triggered;
  lines.push(
    `The first ${fmt(dms.observations)} observations of the workload above (the same bytes, one JSON document a line), through Esper ${peer.esper} on Java ${peer.java} in a child JVM (\`bench/engine/peer/\`, built by Maven; ParallelGC, ${"`"}-Xmx${process.env.ESPER_PEER_HEAP ?? "6g"}${"`"}), and through a fresh dms engine in this process right before it. Each of the ${fmt(peer.statements)} rules is one EPL statement (${peer.distinctStatements} distinct texts, compiled once each and deployed once per rule with its constants as substitution parameters): \`select * from Obs(thingType = ?, <a resource of the rule> is not null) match_recognize (partition by thingName pattern (A{3}) define A as <the rule's condition>)\`; geofences are single-row functions (\`inPolygon\`, \`inPoi\`: dms's formulas in Java). Timed on the JVM: parsing each line (Jackson's streaming parser), the thing lookup, the merge into the thing's state and Esper's evaluation, after compile and deploy.`,
    "",
    table(
      ["run", "observations", "observations/s", "ns/observation", "triggers"],
      [
        ["dms engine (same sample)", fmt(dms.observations), fmt(dms.rate), fmt(1e9 / dms.rate), fmt(dms.triggered)],
        [
          `Esper ${peer.esper} (whole sample, wall)`,
          fmt(peer.observations),
          fmt(peer.observations / peer.seconds),
          fmt((1e9 * peer.seconds) / peer.observations),
          fmt(peer.triggered),
        ],
        [
          `Esper ${peer.esper} (whole sample, CPU time of its thread)`,
          fmt(peer.observations),
          fmt(peer.observations / peer.cpuSeconds),
          fmt((1e9 * peer.cpuSeconds) / peer.observations),
          "",
        ],
        [
          `Esper ${peer.esper} (second half only, JIT warmer)`,
          fmt(peer.observations / 2),
          fmt(peer.observations / 2 / peer.secondHalfSeconds),
          fmt((1e9 * peer.secondHalfSeconds) / (peer.observations / 2)),
          fmt(peer.secondHalfTriggered),
        ],
      ],
    ),
    "",
    table(
      ["figure", "value"],
      [
        [
          "dms / Esper (observations/s, whole sample)",
          `${(dms.rate / (peer.observations / peer.seconds)).toFixed(1)}x`,
        ],
        [
          "triggers",
          same
            ? `the same: ${fmt(dms.triggered)} on both`
            : `differ: dms ${fmt(dms.triggered)}, Esper ${fmt(peer.triggered)}`,
        ],
        [
          "Esper compile (distinct statements) / deploy (every rule)",
          `${peer.compileSeconds.toFixed(1)} s / ${peer.deploySeconds.toFixed(1)} s`,
        ],
        ["Esper heap after the run", `${fmt(peer.heapMiB)} MiB`],
      ],
    ),
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
  "| threshold | `count` consecutive matching observations of the thing, then a fresh start | `match_recognize` `A{count}` partitioned by thing, skip past last row: the same |",
  "| observation without the rule's resources | neither matches nor resets (docs/engine.md, Partial observations) | kept out by the stream filter (`<resource> is not null`), so the pattern does not see it: the same, except that dms counts a resource sent as `null` as carried and Esper as absent |",
  "| `thing.state.*` | the thing's merged state before this observation, kept by the engine | kept by the Java harness in a `HashMap` and put on the event (`prevTemp`, ...): Esper has no per-key merged state of its own short of a table and an `on ... merge` statement ordered after every rule |",
  "| resources | any name, types checked against the thing type, nested objects `<type>.<resource>` | a fixed event class (temp, hum, press, status, latlng): a new resource is a new field and a rebuild |",
  "| rule index | constants in sorted arrays per resource, geofences in a grid: an observation meets the rules it can match | the thing type is an index in Esper's filter service; every condition of the type's statements (`define`) runs for every observation, geofence functions included |",
  "| interval, actions, durability | `threshold.interval`, actions with idempotency keys, state flushed to SQLite | not translated: a listener counts the matches; Esper's state is in memory only |",
  "| what Esper adds | | windows, joins, time-based patterns (`A B* C within 5 min`), aggregation over a window, output rate limiting: none of them is a dms rule |",
].join("\n");
