import type { ExportPageRow, ExportPosition, ExportReader } from "../observations/index.js";
import type { OpenSearchClient } from "./client.js";
import { allPattern, typePattern, type IndexLayout } from "./indices.js";
import { ID_FIELD } from "./mapping.js";

interface Hit {
  _id: string;
  _source: { thingName?: unknown; [field: string]: unknown };
  sort: [number, string];
}

/**
 * Export pages read from OpenSearch in (timestamp, id) order with `search_after`: each page is one
 * search that starts after the last row of the one before, however deep the export goes. The
 * id is the document's (`dmsId`, a keyword with doc values, so that no `_id` field data is loaded).
 */
export class OpenSearchExportReader implements ExportReader {
  constructor(
    private readonly client: OpenSearchClient,
    private readonly layout: IndexLayout,
  ) {}

  async exportPage(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: ExportPosition,
    limit: number,
  ): Promise<ExportPageRow[]> {
    const byType = scope.thingType !== undefined;
    if (!byType && (scope.things ?? []).length === 0) return [];
    const filter: unknown[] = [{ range: { timestamp: { gte: from, lt: to, format: "epoch_millis" } } }];
    filter.push(byType ? { term: { thingType: scope.thingType } } : { terms: { thingName: [...scope.things!] } });
    const indices = byType ? typePattern(this.layout, scope.thingType!) : allPattern(this.layout);
    // A position inside the window is a row of a page before; one before it is where the export starts.
    const started = after.ts >= from;
    const body = await this.client.ok(
      "POST",
      `/${indices}/_search?ignore_unavailable=true&allow_no_indices=true&track_total_hits=false`,
      {
        json: {
          size: limit,
          query: { bool: { filter } },
          sort: [{ timestamp: "asc" }, { [ID_FIELD]: "asc" }],
          ...(started && { search_after: [after.ts, String(after.id)] }),
          _source: true,
        },
      },
    );
    const hits = (body as { hits: { hits: Hit[] } }).hits.hits;
    return hits.map((h) => {
      const { [ID_FIELD]: _id, ...document } = h._source;
      return [h.sort[1], h.sort[0], String(document.thingName), JSON.stringify(document)];
    });
  }
}
