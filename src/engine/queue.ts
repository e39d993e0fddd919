/**
 * The engine's steps one after the other: a step starts once every step queued before it settled,
 * whether it succeeded or failed. Batches, checkpoint slices and rewinds share one queue, so that
 * each of them sees the memory as the one before it left it.
 */
export class StepQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(step: () => T | Promise<T>): Promise<T> {
    const done = this.tail.then(step);
    this.tail = done.catch(() => undefined);
    return done;
  }

  /** Runs `f` once the steps queued so far settled, without holding the steps queued after it. */
  after<T>(f: () => T | Promise<T>): Promise<T> {
    return this.tail.then(f);
  }
}

/** One turn of the event loop: timers and I/O callbacks run before the promise resolves. */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
