import type { Logger } from "../observability/index.js";
import type { OpenSearchClient } from "./client.js";
import { sendBulk, type BulkItem, type RefusedItem } from "./bulk.js";

/**
 * Bytes of documents one `_bulk` carries at most, whatever their number: OpenSearch refuses a
 * request over its `http.max_content_length` (100 MB by default), and a large one holds its heap.
 */
const MAX_BULK_BYTES = 10 * 1024 * 1024;

export interface BulkQueueOptions {
  client: OpenSearchClient;
  /** Documents one `_bulk` carries at most (`OPENSEARCH_BULK_SIZE`). */
  maxItems: number;
  /** How long the first document waits for others before a `_bulk` goes with what there is (`OPENSEARCH_FLUSH_MS`). */
  flushMs: number;
  /** `wait_for`: a `_bulk` answers once its documents are searchable (stores whose writes are read at once). */
  refresh?: "wait_for";
  logger: Logger;
  /** A `_bulk` failed: the queue waits, then sends it again (the store role pauses its consumer). */
  onFailing?: (err: unknown) => void;
  /** A `_bulk` went through after failures. */
  onRecovered?: () => void;
  firstDelayMs?: number;
  maxDelayMs?: number;
}

interface Group {
  left: number;
  refused: RefusedItem[];
  resolve: (refused: RefusedItem[]) => void;
  reject: (err: unknown) => void;
}

interface Entry {
  item: BulkItem;
  group: Group;
}

/** The queue stopped with documents not indexed: their callers see this and commit nothing. */
export class BulkQueueStopped extends Error {}

/**
 * Documents from any number of callers, sent in `_bulk` requests of up to `maxItems`: a caller's
 * `add` resolves once each of its documents is indexed or refused for good (answered with the
 * refused), never before. One request runs at a time; what arrives meanwhile goes in the next,
 * so requests grow with the load. A request that fails (OpenSearch unreachable or busy) is sent
 * again, whole or the items it could not take, after a backoff that doubles up to `maxDelayMs`:
 * nothing is dropped, and callers wait meanwhile.
 */
export class BulkQueue {
  private queue: Entry[] = [];
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failures = 0;
  private wake: (() => void) | undefined;

  constructor(private readonly options: BulkQueueOptions) {}

  add(items: readonly BulkItem[]): Promise<RefusedItem[]> {
    if (this.stopped) return Promise.reject(new BulkQueueStopped("the bulk queue is stopped"));
    if (items.length === 0) return Promise.resolve([]);
    return new Promise<RefusedItem[]>((resolve, reject) => {
      const group: Group = { left: items.length, refused: [], resolve, reject };
      for (const item of items) this.queue.push({ item, group });
      this.schedule();
    });
  }

  /** Stops sending: documents not yet indexed fail their callers with BulkQueueStopped. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
    await this.running;
    this.failAll(new BulkQueueStopped("the bulk queue stopped before these documents were indexed"));
  }

  private schedule(): void {
    if (this.running) return;
    if (this.queue.length >= this.options.maxItems || this.options.flushMs === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.start();
    } else {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.start();
      }, this.options.flushMs);
    }
  }

  private start(): void {
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
      if (this.queue.length > 0 && !this.stopped) this.schedule();
    });
  }

  private async drain(): Promise<void> {
    const { client, maxItems, refresh, logger } = this.options;
    while (this.queue.length > 0 && !this.stopped) {
      const taken = this.queue.slice(0, this.fitting(maxItems));
      this.queue = this.queue.slice(taken.length);
      let again: Entry[] | undefined;
      try {
        const outcome = await sendBulk(
          client,
          taken.map((e) => e.item),
          refresh,
        );
        const retry = new Set(outcome.retry);
        const refused = new Map(outcome.refused.map((r) => [r.item, r]));
        again = [];
        for (const e of taken) {
          if (retry.has(e.item)) {
            again.push(e);
            continue;
          }
          const r = refused.get(e.item);
          if (r) e.group.refused.push(r);
          if (--e.group.left === 0) e.group.resolve(e.group.refused);
        }
        if (again.length > 0) throw new Error(`OpenSearch could not take ${again.length} documents now`);
        if (this.failures > 0) this.options.onRecovered?.();
        this.failures = 0;
        continue;
      } catch (err) {
        // Whatever this request did not index goes first again, in its order.
        again ??= taken;
        this.queue = [...again, ...this.queue];
        this.failures++;
        const delay = this.backoff();
        logger.warn({ err, attempt: this.failures, retryInMs: delay }, "OpenSearch _bulk failed; sending it again");
        this.options.onFailing?.(err);
        await this.sleep(delay);
      }
    }
  }

  /** How many of the first `maxItems` waiting documents fit in one request's bytes (at least one). */
  private fitting(maxItems: number): number {
    let bytes = 0;
    let n = 0;
    while (n < Math.min(maxItems, this.queue.length)) {
      bytes += this.queue[n]!.item.source.length + 100;
      if (n > 0 && bytes > MAX_BULK_BYTES) break;
      n++;
    }
    return n;
  }

  private backoff(): number {
    const first = this.options.firstDelayMs ?? 200;
    const max = this.options.maxDelayMs ?? 10_000;
    return Math.round(Math.min(max, first * 2 ** (this.failures - 1)) * (0.75 + Math.random() * 0.5));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
  }

  private failAll(err: Error): void {
    const groups = new Set(this.queue.map((e) => e.group));
    this.queue = [];
    for (const g of groups) g.reject(err);
  }
}
