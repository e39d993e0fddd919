import { randomUUID } from "node:crypto";
import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureDir } from "../store/index.js";
import type { LockStore } from "./store.js";

/** How often a process waiting for a lock looks again. */
const RETRY_MS = 100;
/** How often a holder touches its lock file, and how long untouched makes a lock file stale. */
const BEAT_MS = 5000;
const STALE_MS = 30_000;

/** The lock files this process holds (their contents): a file naming this pid but none of them is a previous process's. */
const heldHere = new Set<string>();

/**
 * Locks as files in the data directory (`<name>.lock`, holding the holder's pid and a token of
 * its own), for the processes that share one SQLite data directory, which are on one machine: the
 * exclusive create decides between two processes. A lock file is a dead holder's, and taken over,
 * when its pid is gone, when it names this process's pid but is none of its locks (a container
 * restarted with the same pid), or when its holder stopped touching it.
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
    const token = `${process.pid} ${randomUUID()}`;
    while (!take(file, token)) await sleep(RETRY_MS);
    heldHere.add(token);
    const beat = setInterval(() => {
      try {
        const now = new Date();
        utimesSync(file, now, now);
      } catch {
        // Taken over as stale meanwhile: nothing to keep.
      }
    }, BEAT_MS);
    beat.unref();
    try {
      return await work();
    } finally {
      clearInterval(beat);
      heldHere.delete(token);
      if (contents(file) === token) rmSync(file, { force: true });
    }
  }
}

/** Creates the lock file, or removes a dead holder's; true once this process holds it. */
function take(file: string, token: string): boolean {
  try {
    writeFileSync(file, token, { flag: "wx" });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const seen = contents(file);
  // Read again just before: another waiter may have taken the dead holder's place meanwhile.
  if (seen !== undefined && stale(file, seen) && contents(file) === seen) rmSync(file, { force: true });
  return false;
}

function stale(file: string, seen: string): boolean {
  const pid = Number(seen.split(" ")[0]);
  if (!alive(pid)) return true;
  if (pid === process.pid && !heldHere.has(seen)) return true;
  try {
    return Date.now() - statSync(file).mtimeMs > STALE_MS;
  } catch {
    return false;
  }
}

/** The lock file's contents; undefined when it is gone (released meanwhile: the next try creates it). */
function contents(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
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
