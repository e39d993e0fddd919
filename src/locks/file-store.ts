import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureDir } from "../store/index.js";
import type { LockStore } from "./store.js";

/** How often a process waiting for a lock looks again. */
const RETRY_MS = 100;

/**
 * Locks as files in the data directory (`<name>.lock`, holding the holder's pid), for the
 * processes that share one SQLite data directory, which are on one machine: the exclusive create
 * decides between two processes, and a file whose process is gone is a dead holder's, taken over.
 * Within this process, work under one name runs one at a time too.
 */
export class FileLockStore implements LockStore {
  private readonly held = new Map<string, Promise<unknown>>();

  constructor(private readonly dataDir: string) {}

  exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const before = this.held.get(name) ?? Promise.resolve();
    const run = before.catch(() => undefined).then(() => this.across(name, work));
    this.held.set(name, run);
    return run;
  }

  private async across<T>(name: string, work: () => Promise<T>): Promise<T> {
    const file = join(ensureDir(this.dataDir), `${name}.lock`);
    while (!take(file)) await sleep(RETRY_MS);
    try {
      return await work();
    } finally {
      rmSync(file, { force: true });
    }
  }
}

/** Creates the lock file, or removes a dead holder's; true once this process holds it. */
function take(file: string): boolean {
  try {
    writeFileSync(file, String(process.pid), { flag: "wx" });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const holder = holderOf(file);
  // Read again just before: another waiter may have taken the dead holder's place meanwhile.
  if (holder !== undefined && !alive(holder) && holderOf(file) === holder) rmSync(file, { force: true });
  return false;
}

/** The pid in the lock file; undefined when it is gone (released meanwhile: the next try creates it). */
function holderOf(file: string): number | undefined {
  try {
    return Number(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a process of another user holds that pid, alive.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
