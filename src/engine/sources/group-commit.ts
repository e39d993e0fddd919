interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  /** Items one commit takes at most; the rest wait for the next. */
  maxItems?: number;
}

/**
 * Group commit: items added one by one (a device's publish) are committed
 * together, and each `add` resolves only once the commit that took it did.
 * One commit runs at a time; whatever arrives meanwhile goes in the next, so
 * the batch grows with the load and an idle service commits a lone item at
 * once (after the current turn of the event loop, which lets the rest of a
 * socket read join it). A failed commit rejects every item it took.
 */
export class GroupCommit<T> {
  private queue: Waiting<T>[] = [];
  private running: Promise<void> | undefined;
  private readonly maxItems: number;

  constructor(
    private readonly commit: (items: readonly T[]) => Promise<void>,
    options: GroupCommitOptions = {},
  ) {
    this.maxItems = options.maxItems ?? 5000;
  }

  /** Items waiting for a commit, not counting those of the commit under way. */
  get waiting(): number {
    return this.queue.length;
  }

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.running ??= new Promise<void>((started) => setImmediate(started)).then(() => this.drain());
    });
  }

  /** Resolves once everything added so far is committed (or failed). */
  async flushed(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const taken = this.queue.length <= this.maxItems ? this.queue : this.queue.slice(0, this.maxItems);
      this.queue = taken === this.queue ? [] : this.queue.slice(this.maxItems);
      try {
        await this.commit(taken.map((w) => w.item));
        for (const w of taken) w.resolve();
      } catch (err) {
        for (const w of taken) w.reject(err);
      }
    }
    this.running = undefined;
  }
}
