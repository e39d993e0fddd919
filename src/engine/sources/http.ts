import { decodeValue, type Ingested } from "../decode.js";
import type { BatchResult, Rejected } from "../engine.js";
import type { ObservationSource } from "./source.js";

/** What `POST /observations` answers: item indexes are positions in the request's body. */
export interface HttpIngestResult {
  accepted: number;
  triggered: number;
  /** Items the engine refused (dead letters). */
  rejected: Rejected[];
  /** Items the caller may not post (`authorize` said why). */
  denied: { index: number; message: string }[];
}

/**
 * The embedded source, `POST /observations`: each item of the body is decoded once, then authorized
 * on what was decoded (the engine evaluates exactly that, never the item again), and the allowed ones
 * go to the engine as one batch; the request is answered once they are stored and evaluated.
 */
export class HttpObservationSource implements ObservationSource<Ingested, BatchResult> {
  readonly name = "http";
  private handle: ((batch: readonly Ingested[]) => Promise<BatchResult>) | undefined;

  start(handle: (batch: readonly Ingested[]) => Promise<BatchResult>): Promise<void> {
    this.handle = handle;
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.handle = undefined;
    return Promise.resolve();
  }

  get started(): boolean {
    return this.handle !== undefined;
  }

  /**
   * `authorize` gets the thing an item names (a refused item that names one too, so a caller learns
   * nothing about another domain's things from the reason) and returns why it may not be posted, or
   * undefined. Rejects when the source is not started.
   */
  async post(
    items: readonly unknown[],
    authorize: (thingName: string) => string | undefined,
  ): Promise<HttpIngestResult> {
    const handle = this.handle;
    if (handle === undefined) throw new Error("the HTTP source is not started");
    const denied: HttpIngestResult["denied"] = [];
    const allowed: Ingested[] = [];
    const indexes: number[] = [];
    items.forEach((item, index) => {
      const decoded = decodeValue(item, { source: this.name });
      const name = decoded.observation?.thingName ?? decoded.refusal?.thingName;
      const denial = name === undefined ? undefined : authorize(name);
      if (denial !== undefined) {
        denied.push({ index, message: denial });
        return;
      }
      allowed.push(decoded);
      indexes.push(index);
    });
    const result = await handle(allowed);
    return {
      accepted: result.accepted,
      triggered: result.triggered,
      rejected: result.rejected.map((r) => ({ ...r, index: indexes[r.index]! })),
      denied,
    };
  }
}
