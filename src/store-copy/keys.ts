import type pg from "pg";
import { FileKeyStore, KEY_NAMES } from "../keys/index.js";

/**
 * Copies the service's keys from the data directory's key files into `service_keys`, so that
 * tokens, signed URLs and device secrets made before the move keep verifying. A key the data
 * directory lacks is made there first, as the service would have: nothing was made with it yet.
 * Answers the keys copied.
 */
export async function copyKeys(dataDir: string, target: pg.PoolClient): Promise<number> {
  const keys = new FileKeyStore(dataDir);
  for (const name of KEY_NAMES) {
    await target.query("INSERT INTO service_keys (name, value) VALUES ($1, $2)", [name, await keys.key(name)]);
  }
  return KEY_NAMES.length;
}
