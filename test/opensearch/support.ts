import { createLogger } from "../../src/observability/index.js";
import {
  BulkQueue,
  IndexTemplates,
  OpenSearchClient,
  bulkItem,
  type IndexLayout,
  type IndexPeriod,
} from "../../src/opensearch/index.js";
import type { ObservationDocument } from "../../src/observations/index.js";
import type { ResourceDefinition } from "../../src/things/index.js";
import { openSearchCall } from "../support/opensearch.js";

/** A prefix no other test (or run on this machine) uses: indices and templates are named after it. */
export function uniquePrefix(what: string): string {
  return `t-${what}-${process.pid}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
}

export const QUIET = createLogger("silent", false);

/**
 * Indexes documents as the store role does (its templates, its `_bulk` queue, its documents),
 * under the ids given, then makes them searchable.
 */
export async function indexDocuments(
  url: string,
  layout: IndexLayout,
  resourcesOf: (thingType: string) => readonly ResourceDefinition[],
  docs: readonly { id: string; document: ObservationDocument }[],
): Promise<void> {
  const client = new OpenSearchClient(url);
  const templates = new IndexTemplates({ client, layout, replicas: 0, resourcesOf, logger: QUIET });
  await templates.ensure(new Set(docs.map((d) => d.document.thingType)));
  const queue = new BulkQueue({ client, maxItems: 5000, flushMs: 0, logger: QUIET });
  const refused = await queue.add(docs.map((d) => bulkItem(layout, d.id, d.document)));
  await queue.stop();
  if (refused.length > 0) throw new Error(`OpenSearch refused ${refused.length}: ${JSON.stringify(refused[0])}`);
  await openSearchCall(url, "POST", `/${layout.prefix}-*/_refresh`);
}

/** Deletes the indices and index templates of a prefix. */
export async function dropPrefix(url: string, prefix: string): Promise<void> {
  await openSearchCall(url, "DELETE", `/${prefix}-*?expand_wildcards=all`);
  await openSearchCall(url, "DELETE", `/_index_template/${prefix}-*`);
}

export function layoutOf(prefix: string, period: IndexPeriod): IndexLayout {
  return { prefix, period };
}
