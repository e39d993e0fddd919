/**
 * Time for the outbox: the clock and a timer that agree with each other, so
 * tests can replace both with a fake clock and measure retry waits exactly.
 */
export interface Timers {
  now(): number;
  /** Runs `fn` once `ms` have passed on this clock; returns a cancel function. */
  setTimeout(fn: () => void, ms: number): () => void;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, Math.max(0, ms));
    handle.unref();
    return () => clearTimeout(handle);
  },
};
