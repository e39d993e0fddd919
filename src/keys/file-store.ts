import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomSecret } from "../config/index.js";
import { ensureDir } from "../store/index.js";
import type { KeyName, KeyStore } from "./store.js";

/**
 * Keys as files in the data directory, one per key (mode 0600), beside the SQLite database and
 * never in it, so that a copy of the database alone holds none. The exclusive create decides
 * between two processes that start at once on one data directory.
 */
export class FileKeyStore implements KeyStore {
  constructor(private readonly dataDir: string) {}

  async key(name: KeyName): Promise<string> {
    const file = join(ensureDir(this.dataDir), name);
    if (!existsSync(file)) {
      try {
        writeFileSync(file, randomSecret(), { mode: 0o600, flag: "wx" });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    }
    return readFileSync(file, "utf8").trim();
  }
}

/** Keys of this process alone, for an in-memory database: nothing outlives it. */
export class MemoryKeyStore implements KeyStore {
  private readonly keys = new Map<KeyName, string>();

  async key(name: KeyName): Promise<string> {
    let key = this.keys.get(name);
    if (key === undefined) this.keys.set(name, (key = randomSecret()));
    return key;
  }
}
