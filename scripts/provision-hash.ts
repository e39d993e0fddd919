/**
 * Hashes the chosen device secrets of a provisioning file offline: each
 * thing's `secret` becomes a `secretHash`, so that the file given to
 * DMS_PROVISION holds no secret in clear and dms hashes nothing at start.
 *
 *   npm run provision:hash -- in.json > out.json
 *
 * Generated secrets (`dmsd_…`) are hashed the same way. A secret shorter than
 * the minimum is refused, naming the thing, and nothing is written.
 */
import { readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { MIN_CHOSEN_SECRET_LENGTH, hashChosenSecret } from "../src/things/index.js";

interface Entry {
  thingName?: unknown;
  secret?: unknown;
  secretHash?: unknown;
}

/** Hashes in flight at once: enough to keep every thread of libuv's pool busy. */
const IN_FLIGHT = 64 * availableParallelism();

async function hashEntries(things: Entry[]): Promise<void> {
  const todo = things.filter((t): t is Entry & { secret: string } => typeof t.secret === "string");
  for (const t of todo) {
    if (t.secret.length < MIN_CHOSEN_SECRET_LENGTH) {
      throw new Error(`thing ${String(t.thingName)}: a secret needs ${MIN_CHOSEN_SECRET_LENGTH} characters`);
    }
    if (t.secretHash !== undefined) throw new Error(`thing ${String(t.thingName)}: both secret and secretHash`);
  }
  for (let from = 0; from < todo.length; from += IN_FLIGHT) {
    const slice = todo.slice(from, from + IN_FLIGHT);
    const hashes = await Promise.all(slice.map((t) => hashChosenSecret(t.secret)));
    slice.forEach((t: Entry, n) => {
      delete t.secret;
      t.secretHash = hashes[n];
    });
  }
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) throw new Error("usage: npm run provision:hash -- <provisioning.json> > <hashed.json>");
  const doc = JSON.parse(await readFile(file, "utf8")) as { things?: unknown };
  if (doc.things !== undefined && !Array.isArray(doc.things)) throw new Error("things: not an array");
  await hashEntries((doc.things ?? []) as Entry[]);
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

main().catch((err: unknown) => {
  console.error(`provision:hash: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
