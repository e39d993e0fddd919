/**
 * Who runs next on the FIND threads. Each caller (a principal's home domain) waits in a queue
 * of its own and free threads go to the callers in turn (the one running fewest first), so one caller's burst of heavy
 * queries neither holds every thread nor puts every other caller behind it in one line: with
 * several threads, one caller runs on all but one of them, and another caller's query starts
 * as soon as a thread is free instead of after the whole burst.
 */
export class Turns {
  /** Waiting requests by caller; a Map keeps insertion order, which is the order of turns. */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly running = new Map<string, number>();
  private runningTotal = 0;
  private waitingTotal = 0;

  constructor(
    /** Requests that may run at once: the threads. */
    private readonly slots: number,
    /** Requests that may wait in all, and of one caller. */
    private readonly limits: { waiting: number; waitingPerCaller: number },
  ) {}

  /** Requests one caller may run at once: all threads but one when there are several, so another caller always finds one. */
  get perCaller(): number {
    return Math.max(1, this.slots - 1);
  }

  /**
   * Waits for the caller's turn. Resolves with the release to call when its request is done;
   * rejects with `refused()` when too many wait, or with `expired()` at `deadline` (epoch ms).
   */
  take(
    caller: string,
    deadline: number,
    refused: (why: "all" | "caller") => Error,
    expired: () => Error,
  ): Promise<() => void> {
    const queue = this.waiting.get(caller);
    if ((queue?.length ?? 0) >= this.limits.waitingPerCaller) return Promise.reject(refused("caller"));
    if (this.waitingTotal >= this.limits.waiting) return Promise.reject(refused("all"));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timer: undefined };
      waiter.timer = setTimeout(
        () => {
          this.leave(caller, waiter);
          reject(expired());
        },
        Math.max(0, deadline - Date.now()),
      );
      if (queue) queue.push(waiter);
      else this.waiting.set(caller, [waiter]);
      this.waitingTotal++;
      this.dispatch();
    });
  }

  private leave(caller: string, waiter: Waiter): void {
    const queue = this.waiting.get(caller);
    const at = queue?.indexOf(waiter) ?? -1;
    if (at < 0) return;
    queue!.splice(at, 1);
    this.waitingTotal--;
    if (queue!.length === 0) this.waiting.delete(caller);
  }

  /**
   * Starts waiting requests while threads are free: each goes to the waiting caller that runs
   * fewest (below `perCaller`), the first in turn among equals, which then goes to the back.
   */
  private dispatch(): void {
    while (this.runningTotal < this.slots) {
      let next: string | undefined;
      let fewest = this.perCaller;
      for (const caller of this.waiting.keys()) {
        const n = this.running.get(caller) ?? 0;
        if (n < fewest) {
          next = caller;
          fewest = n;
        }
      }
      if (next === undefined) return;
      const queue = this.waiting.get(next)!;
      const waiter = queue.shift()!;
      this.waitingTotal--;
      this.waiting.delete(next);
      if (queue.length > 0) this.waiting.set(next, queue);
      clearTimeout(waiter.timer);
      this.running.set(next, (this.running.get(next) ?? 0) + 1);
      this.runningTotal++;
      const caller = next;
      let released = false;
      waiter.resolve(() => {
        if (released) return;
        released = true;
        const n = this.running.get(caller)! - 1;
        if (n === 0) this.running.delete(caller);
        else this.running.set(caller, n);
        this.runningTotal--;
        this.dispatch();
      });
    }
  }
}

interface Waiter {
  resolve: (release: () => void) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}
