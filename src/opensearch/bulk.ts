import { OpenSearchUnavailable, errorOf, type OpenSearchClient } from "./client.js";

/** One document to index: where, under which id, its JSON. */
export interface BulkItem {
  index: string;
  id: string;
  source: string;
}

/** A document OpenSearch refused for good (a value its index cannot map), with its reason. */
export interface RefusedItem {
  item: BulkItem;
  type: string;
  reason: string;
}

/** What one `_bulk` request did: the items to send again (the server was busy) and those refused. */
interface BulkOutcome {
  retry: BulkItem[];
  refused: RefusedItem[];
}

interface BulkAnswer {
  errors?: boolean;
  items?: { index?: { status?: number; error?: unknown } }[];
}

/**
 * Sends one `_bulk` of `index` operations (an observation indexed again under its id, a
 * replay's, replaces itself); one over the server's request size goes in halves. The request
 * failing as a whole (unreachable, 429, 5xx) rejects:
 * the caller sends it all again. Items failing with 429 or 5xx are to be sent again; any other
 * item failure is the document's own and final.
 */
export async function sendBulk(
  client: OpenSearchClient,
  items: readonly BulkItem[],
  refresh: "wait_for" | undefined,
): Promise<BulkOutcome> {
  let ndjson = "";
  for (const it of items) ndjson += `${JSON.stringify({ index: { _index: it.index, _id: it.id } })}\n${it.source}\n`;
  const path = refresh ? `/_bulk?refresh=${refresh}` : "/_bulk";
  const answer = await client.call("POST", path, { ndjson });
  if (answer.status === 413) {
    // Over the server's request size: halves go on their own; a single document that large is refused.
    if (items.length === 1) {
      return {
        retry: [],
        refused: [
          { item: items[0]!, type: "request_too_large", reason: "the document is over OpenSearch's request size" },
        ],
      };
    }
    const half = Math.ceil(items.length / 2);
    const [a, b] = [
      await sendBulk(client, items.slice(0, half), refresh),
      await sendBulk(client, items.slice(half), refresh),
    ];
    return { retry: [...a.retry, ...b.retry], refused: [...a.refused, ...b.refused] };
  }
  if (answer.status !== 200) {
    const { type, reason } = errorOf(answer.body);
    throw new OpenSearchUnavailable(`OpenSearch _bulk answered ${answer.status} ${type ?? ""}: ${reason}`);
  }
  const body = answer.body as BulkAnswer;
  const out: BulkOutcome = { retry: [], refused: [] };
  if (body.errors !== true) return out;
  const results = body.items ?? [];
  items.forEach((item, i) => {
    const result = results[i]?.index;
    const status = result?.status ?? 500;
    if (status < 300) return;
    if (status === 429 || status >= 500) {
      out.retry.push(item);
      return;
    }
    const { type, reason } = errorOf({ error: result?.error });
    out.refused.push({ item, type: type ?? "unknown", reason });
  });
  return out;
}
