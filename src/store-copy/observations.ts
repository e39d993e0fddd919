import type pg from "pg";
import { createDayPartitions, partitionTable } from "../observations/index.js";
import type { Db } from "../store/index.js";
import { convert } from "./convert.js";
import { copyRows } from "./rows.js";

const { same } = convert;
/** A day table's columns, the same on both sides; `doc` is stored text both read back alike (DOCUMENT_SQL). */
const OBSERVATION_COLUMNS = { id: same, thing_name: same, thing_type: same, domain: same, ts: same, doc: same };

/** A day table of `observations.sqlite`: `observations_d<day>`, `observations_dm<day>` before 1970. */
export const DAY_TABLE = /^observations_d(m?)(\d+)$/;

/** The days `observations.sqlite` has a table for, ascending (the tables themselves, not the catalog). */
export function observationDays(observations: Db): number[] {
  return observations
    .prepare<[], { name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'observations_d%'",
    )
    .all()
    .flatMap(({ name }) => {
      const match = DAY_TABLE.exec(name);
      return match ? [(match[1] ? -1 : 1) * Number(match[2])] : [];
    })
    .sort((a, b) => a - b);
}

/**
 * Copies the observations day by day: the day's partition made, its rows sent with their ids
 * (FIND's `_id`, the export's paging key), then the streams' marks, and the id sequence moved
 * to where the SQLite file's stood. Answers the rows sent.
 */
export async function copyObservations(
  observations: Db,
  target: pg.PoolClient,
  log: (line: string) => void,
): Promise<number> {
  let sent = 0;
  for (const day of observationDays(observations)) {
    await createDayPartitions(target, [day]);
    const from = partitionTable(day);
    const rows = await copyRows(observations, target, { from, into: "observations", columns: OBSERVATION_COLUMNS });
    log(`observations: ${from}, ${rows} rows`);
    sent += rows;
  }
  await copyRows(observations, target, {
    from: "observation_marks",
    into: "observation_marks",
    columns: { stream: same, offset: same },
  });
  const { next } = observations.prepare<[], { next: number }>("SELECT next FROM observation_ids").get()!;
  // The next id SQLite would have handed out, or past the largest copied when that is further.
  await target.query(
    `SELECT setval('observation_ids', greatest($1::bigint, (SELECT coalesce(max(id), 0) FROM observations)), true)
     WHERE greatest($1::bigint, (SELECT coalesce(max(id), 0) FROM observations)) > 0`,
    [next - 1],
  );
  return sent;
}
