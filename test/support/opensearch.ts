import { runServiceScript } from "./service-script.js";

/** A first start downloads the runner's jars (~55 MB) and then boots a JVM for ~40 s on a busy box. */
export const OPENSEARCH_START_TIMEOUT_MS = 300_000;

/**
 * Starts (or reuses) the single-node test OpenSearch and returns its HTTP URL, e.g.
 * "http://127.0.0.1:9250". Honours the env vars of scripts/opensearch.sh (OPENSEARCH_PORT, ...).
 * Call it from a `beforeAll` with OPENSEARCH_START_TIMEOUT_MS as the hook timeout.
 */
export async function startOpenSearch(): Promise<string> {
  return runServiceScript("opensearch.sh", "start", "OPENSEARCH_URL");
}

/** Stops the test OpenSearch and deletes its state. */
export async function stopOpenSearch(): Promise<void> {
  await runServiceScript("opensearch.sh", "stop");
}

/** An answer of OpenSearch's REST API: the status and the parsed body. */
export interface OpenSearchAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** One REST call; `body` is JSON, or an NDJSON string for `_bulk`. */
export async function openSearchCall(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<OpenSearchAnswer> {
  const ndjson = typeof body === "string";
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": ndjson ? "application/x-ndjson" : "application/json" },
    body: body === undefined ? undefined : ndjson ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Indexes documents with `_bulk` in chunks and refreshes, failing on any item error. */
export async function bulkIndex(
  url: string,
  docs: readonly { index: string; id: string; source: unknown }[],
  chunk = 5_000,
): Promise<void> {
  for (let i = 0; i < docs.length; i += chunk) {
    const lines: string[] = [];
    for (const d of docs.slice(i, i + chunk)) {
      lines.push(JSON.stringify({ index: { _index: d.index, _id: d.id } }), JSON.stringify(d.source));
    }
    const res = await openSearchCall(url, "POST", "/_bulk", `${lines.join("\n")}\n`);
    if (res.status !== 200 || res.body.errors !== false) {
      const items = (res.body.items as { index: { error?: unknown } }[] | undefined) ?? [];
      const firstError = items.find((it) => it.index.error)?.index.error;
      throw new Error(`bulk indexing failed (${res.status}): ${JSON.stringify(firstError ?? res.body).slice(0, 500)}`);
    }
  }
  await openSearchCall(url, "POST", "/_refresh");
}
