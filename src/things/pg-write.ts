import { ApiError, notFound } from "../errors/index.js";
import type { PgQueryable } from "../store/index.js";
import { planBatch, unchanged, type BatchPlan, type BatchReads } from "./batch-plan.js";
import { toThing, type ThingRow } from "./rows.js";
import { checkMode, type ThingWriteItem, type ThingWriteResult } from "./store.js";
import type { NewThing } from "./types.js";

/**
 * How often a batch is decided again when things it was to create were created meanwhile by
 * another process, before it is written item by item.
 */
const BATCH_ATTEMPTS = 3;

/**
 * Writes a batch of things inside the transaction `tx` as `ThingStore.writeThings` says, with a
 * few statements whatever its size: the stored things locked and read at once, every item decided
 * (`planBatch`), then each table written by one statement. When another process created one of
 * the things meanwhile, the batch is decided again; when a serial turns out taken, it is written
 * item by item, each refused on its own.
 */
export async function writeThingBatch(tx: PgQueryable, items: readonly ThingWriteItem[]): Promise<ThingWriteResult[]> {
  for (let attempt = 0; attempt < BATCH_ATTEMPTS; attempt++) {
    const plan = planBatch(items, await readBatch(tx, items));
    if (plan.inserts.length === 0 && plan.updates.length === 0) {
      await writeDigests(tx, plan);
      return plan.results;
    }
    // Undoes the batch's writes, not the locks taken by its reads.
    await tx.query("SAVEPOINT thing_batch");
    try {
      if (await writeRows(tx, plan)) {
        await writeDigests(tx, plan);
        await tx.query("RELEASE SAVEPOINT thing_batch");
        return plan.results;
      }
      await tx.query("ROLLBACK TO SAVEPOINT thing_batch");
    } catch (err) {
      if (!isSerialTaken(err)) throw err;
      await tx.query("ROLLBACK TO SAVEPOINT thing_batch");
      break;
    }
  }
  return writeEach(tx, items);
}

/** The stored things of the batch's names, locked in name order (concurrent batches never wait for each other in a circle). */
async function readBatch(tx: PgQueryable, items: readonly ThingWriteItem[]): Promise<BatchReads> {
  const names = [...new Set(items.map((i) => i.input.thingName))];
  const typeIds = [...new Set(items.map((i) => i.input.thingType))];
  const serials = [...new Set(items.flatMap((i) => (i.input.serial === undefined ? [] : [i.input.serial])))];
  const stored = await tx.query<ThingRow>(
    "SELECT * FROM things WHERE thing_name = ANY($1::text[]) ORDER BY thing_name FOR UPDATE",
    [names],
  );
  const types = await tx.query<{ now: Date; ids: string[] }>(
    "SELECT now() AS now, ARRAY(SELECT id FROM thing_types WHERE id = ANY($1::text[])) AS ids",
    [typeIds],
  );
  const holders = await tx.query<{ serial: string; thing_name: string }>(
    "SELECT serial, thing_name FROM things WHERE serial = ANY($1::text[])",
    [serials],
  );
  const { now, ids } = types.rows[0]!;
  return {
    stored: new Map(stored.rows.map((r) => [r.thing_name, r])),
    thingTypes: new Set(ids),
    serialHolders: new Map(holders.rows.map((r) => [r.serial, r.thing_name])),
    now,
  };
}

/**
 * Updates, then inserts (a serial an update frees may be taken by a new thing), each in one
 * statement; false when a thing to insert was created meanwhile (the insert waited for its commit).
 */
async function writeRows(tx: PgQueryable, plan: BatchPlan): Promise<boolean> {
  if (plan.updates.length > 0) {
    await tx.query(
      `UPDATE things AS t SET thing_type = u.thing_type, domain = u.domain, serial = u.serial,
         secret_hash = u.secret_hash, label = u.label, updated_at = now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
         AS u(thing_name, thing_type, domain, serial, secret_hash, label)
       WHERE t.thing_name = u.thing_name`,
      columns(plan.updates),
    );
  }
  if (plan.inserts.length === 0) return true;
  // In name order, as every batch inserts: two batches creating the same things never wait for each other in a circle.
  const inserts = [...plan.inserts].sort((a, b) => (a.thing_name < b.thing_name ? -1 : 1));
  const inserted = await tx.query(
    `INSERT INTO things (thing_name, thing_type, domain, serial, secret_hash, label, created_at, updated_at)
     SELECT thing_name, thing_type, domain, serial, secret_hash, label, now(), now()
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
       WITH ORDINALITY AS u(thing_name, thing_type, domain, serial, secret_hash, label, i)
     ORDER BY i
     ON CONFLICT (thing_name) DO NOTHING`,
    columns(inserts),
  );
  return inserted.rowCount === inserts.length;
}

/** The columns the batch writes, one array each, for `unnest`. */
function columns(rows: readonly ThingRow[]): (string | null)[][] {
  return [
    rows.map((r) => r.thing_name),
    rows.map((r) => r.thing_type),
    rows.map((r) => r.domain),
    rows.map((r) => r.serial),
    rows.map((r) => r.secret_hash),
    rows.map((r) => r.label),
  ];
}

async function writeDigests(tx: PgQueryable, plan: BatchPlan): Promise<void> {
  if (plan.digests.size > 0) {
    await tx.query(
      `INSERT INTO thing_provisions (thing_name, digest) SELECT * FROM unnest($1::text[], $2::text[])
       ON CONFLICT (thing_name) DO UPDATE SET digest = excluded.digest`,
      [[...plan.digests.keys()], [...plan.digests.values()]],
    );
  }
  if (plan.forgotten.size > 0) {
    await tx.query("DELETE FROM thing_provisions WHERE thing_name = ANY($1::text[])", [[...plan.forgotten]]);
  }
}

/** The batch item by item, each in a savepoint of its own: a refused item is rolled back alone. */
async function writeEach(tx: PgQueryable, items: readonly ThingWriteItem[]): Promise<ThingWriteResult[]> {
  const results: ThingWriteResult[] = [];
  for (const item of items) {
    await tx.query("SAVEPOINT thing_write");
    try {
      results.push(await writeThing(tx, item));
      await tx.query("RELEASE SAVEPOINT thing_write");
    } catch (err) {
      await tx.query("ROLLBACK TO SAVEPOINT thing_write");
      const refused = refusalOf(err, item.input);
      if (!refused) throw err;
      results.push({ error: refused });
    }
  }
  return results;
}

/** One thing of a batch inside its transaction: checked again, then written unless it already holds these values. */
async function writeThing(tx: PgQueryable, item: ThingWriteItem): Promise<ThingWriteResult> {
  const { input } = item;
  const type = await tx.query("SELECT 1 FROM thing_types WHERE id = $1", [input.thingType]);
  if (type.rowCount === 0) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.thingType}`, "thingType");
  const { rows } = await tx.query<ThingRow>("SELECT * FROM things WHERE thing_name = $1 FOR UPDATE", [input.thingName]);
  const stored = rows[0];
  checkMode(input.thingName, stored && toThing(stored), item.mode);
  if (input.serial !== undefined) {
    const holder = await tx.query<{ thing_name: string }>("SELECT thing_name FROM things WHERE serial = $1", [
      input.serial,
    ]);
    const other = holder.rows[0]?.thing_name;
    if (other !== undefined && other !== input.thingName) {
      throw new ApiError("ALREADY_EXISTS", `Serial ${input.serial} belongs to thing ${other}`, "serial");
    }
  }
  if (stored && unchanged(input, stored, item.secretHash)) {
    if (item.digest !== undefined) await rememberDigest(tx, input.thingName, item.digest);
    return { change: "unchanged", thing: toThing(stored) };
  }
  const values = [
    input.thingName,
    input.thingType,
    input.domain,
    input.serial ?? null,
    item.secretHash,
    input.label ?? null,
  ];
  const written = stored
    ? await tx.query<ThingRow>(
        `UPDATE things SET thing_type = $2, domain = $3, serial = COALESCE($4, serial),
           secret_hash = COALESCE($5, secret_hash), label = COALESCE($6, label), updated_at = now()
         WHERE thing_name = $1 RETURNING *`,
        values,
      )
    : await tx.query<ThingRow>(
        `INSERT INTO things (thing_name, thing_type, domain, serial, secret_hash, label, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, now(), now()) ON CONFLICT (thing_name) DO NOTHING RETURNING *`,
        values,
      );
  // Another process created the thing since it was looked for (the insert waited for its commit):
  // written again against the row it made, as its mode says (a create is refused).
  if (written.rowCount === 0) return writeThing(tx, item);
  if (item.digest !== undefined) await rememberDigest(tx, input.thingName, item.digest);
  // Changed by another hand than the file's: the next start applies the file's entry again.
  else await tx.query("DELETE FROM thing_provisions WHERE thing_name = $1", [input.thingName]);
  return { change: stored ? "updated" : "created", thing: toThing(written.rows[0]!) };
}

/** PostgreSQL's SQLSTATE for a unique violation. */
const UNIQUE_VIOLATION = "23505";

/** A serial taken by a thing written concurrently, or by another of the batch on its way to the serial it claims. */
function isSerialTaken(err: unknown): boolean {
  const { code, constraint } = err as { code?: string; constraint?: string };
  return code === UNIQUE_VIOLATION && constraint === "things_serial_key";
}

/** The refusal an item's failure answers with, or undefined for a fault of the database. */
function refusalOf(err: unknown, input: NewThing): ApiError | undefined {
  if (err instanceof ApiError) return err;
  if (isSerialTaken(err)) {
    return new ApiError("ALREADY_EXISTS", `Serial ${input.serial} belongs to another thing`, "serial");
  }
  return undefined;
}

async function rememberDigest(tx: PgQueryable, thingName: string, digest: string): Promise<void> {
  await tx.query(
    `INSERT INTO thing_provisions (thing_name, digest) VALUES ($1, $2)
     ON CONFLICT (thing_name) DO UPDATE SET digest = excluded.digest`,
    [thingName, digest],
  );
}
