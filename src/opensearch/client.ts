/**
 * OpenSearch's REST API over Node's fetch: the few calls dms makes (`_bulk`, `_search`, index
 * templates, mappings, `_cat/indices`, `_delete_by_query`, `_count`) need no client library.
 */

export interface OpenSearchAnswer {
  status: number;
  /** The parsed body (undefined for an empty one). */
  body: unknown;
}

export interface CallOptions {
  /** A `_bulk` body: NDJSON text, sent as it is. */
  ndjson?: string;
  /** A JSON body. */
  json?: unknown;
  signal?: AbortSignal;
}

/** The server could not be reached, or answered something that is not JSON. */
export class OpenSearchUnavailable extends Error {}

export class OpenSearchClient {
  private readonly base: string;

  constructor(url: string) {
    this.base = url.replace(/\/+$/, "");
  }

  /** One call; any HTTP status resolves (the caller reads it), a network failure rejects with OpenSearchUnavailable. */
  async call(method: string, path: string, options: CallOptions = {}): Promise<OpenSearchAnswer> {
    const body = options.ndjson ?? (options.json === undefined ? undefined : JSON.stringify(options.json));
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers:
          body === undefined ? {} : { "content-type": options.ndjson ? "application/x-ndjson" : "application/json" },
        body,
        signal: options.signal,
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new OpenSearchUnavailable(`OpenSearch at ${this.base} did not answer: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const text = await res.text();
    if (text === "") return { status: res.status, body: undefined };
    try {
      return { status: res.status, body: JSON.parse(text) as unknown };
    } catch {
      throw new OpenSearchUnavailable(
        `OpenSearch answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`,
      );
    }
  }

  /** A call that must succeed (2xx); anything else rejects with the status and OpenSearch's reason. */
  async ok(method: string, path: string, options: CallOptions = {}): Promise<unknown> {
    const answer = await this.call(method, path, options);
    if (answer.status < 200 || answer.status >= 300) throw new OpenSearchError(method, path, answer);
    return answer.body;
  }
}

/** OpenSearch refused a call: its status and the reason it gave. */
export class OpenSearchError extends Error {
  readonly status: number;
  readonly type: string | undefined;
  readonly reason: string;

  constructor(method: string, path: string, answer: OpenSearchAnswer) {
    const { type, reason } = errorOf(answer.body);
    super(`OpenSearch ${method} ${path}: ${answer.status} ${type ?? ""} ${reason}`.replace(/\s+/g, " ").trim());
    this.status = answer.status;
    this.type = type;
    this.reason = reason;
  }
}

/** The root cause OpenSearch names in an error body: its type and reason. */
export function errorOf(body: unknown): { type: string | undefined; reason: string } {
  const error = (body as { error?: unknown } | undefined)?.error;
  if (typeof error === "string") return { type: undefined, reason: error };
  if (error === null || typeof error !== "object") return { type: undefined, reason: JSON.stringify(body ?? null) };
  const e = error as {
    type?: unknown;
    reason?: unknown;
    root_cause?: unknown;
    caused_by?: unknown;
    failed_shards?: unknown;
  };
  type Cause = { type?: unknown; reason?: unknown };
  const first = (v: unknown): Cause | undefined => (Array.isArray(v) ? (v[0] as Cause | undefined) : undefined);
  // A search that failed on every shard says why in each shard's failure; else the root cause says it.
  const shard = first(e.failed_shards) as { reason?: Cause } | undefined;
  const pick = shard?.reason ?? first(e.root_cause) ?? (e.caused_by as Cause | undefined) ?? e;
  return {
    type: typeof pick.type === "string" ? pick.type : typeof e.type === "string" ? e.type : undefined,
    reason: typeof pick.reason === "string" ? pick.reason : typeof e.reason === "string" ? e.reason : "no reason given",
  };
}
