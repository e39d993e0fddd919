import type { DeadLetterStore } from "../engine/index.js";
import {
  storedInput,
  type ObservationColumns,
  type ObservationStore,
  type StoredObservationInput,
} from "../observations/index.js";
import type { BulkItem } from "./bulk.js";
import type { BulkQueue } from "./bulk-queue.js";
import type { OpenSearchClient } from "./client.js";
import { bulkItem, inputId } from "./documents.js";
import { allPattern, parseIndex, type IndexLayout } from "./indices.js";
import { refusedLetter } from "./refusals.js";
import type { IndexTemplates } from "./templates.js";

export interface OpenSearchStoreOptions {
  client: OpenSearchClient;
  layout: IndexLayout;
  templates: IndexTemplates;
  /** Sends the documents; answers once they are searchable (`refresh: wait_for`), as a database's write is read at once. */
  queue: BulkQueue;
  /** Where a document OpenSearch refuses is kept. */
  deadLetters: Pick<DeadLetterStore, "insertBatch">;
  clock: () => number;
  /**
   * Rows a stream replays (Kafka) are the store role's, which indexes the topic: false leaves
   * them to it (the engine's store), true indexes every row (tests, tools).
   */
  indexStreamRows: boolean;
}

/**
 * The observation store on OpenSearch: rows written through it are indexed (`_bulk`), retention
 * drops whole indices and deletes by query in the index the cutoff cuts. The engine writes the
 * observations no stream replays through it (`POST /observations`, MQTT or SET_RESOURCE without
 * Kafka); what comes from the observations topic the store role indexes.
 */
export class OpenSearchObservationStore implements ObservationStore {
  constructor(private readonly options: OpenSearchStoreOptions) {}

  async insertBatch(inputs: readonly StoredObservationInput[]): Promise<void> {
    await this.index(inputs);
  }

  async insertColumns(columns: ObservationColumns): Promise<void> {
    const inputs: StoredObservationInput[] = [];
    for (let i = 0; i < columns.count; i++) {
      if (!this.options.indexStreamRows && columns.stream[i]! >= 0) continue;
      inputs.push(storedInput(columns, i));
    }
    await this.index(inputs);
  }

  private async index(inputs: readonly StoredObservationInput[]): Promise<void> {
    if (inputs.length === 0) return;
    const { layout, templates, queue, deadLetters, clock } = this.options;
    await templates.ensure(new Set(inputs.map((i) => i.document.thingType)));
    const documents = new Map<BulkItem, StoredObservationInput>();
    for (const input of inputs) documents.set(bulkItem(layout, inputId(input), input.document), input);
    const refused = await queue.add([...documents.keys()]);
    if (refused.length === 0) return;
    const now = clock();
    await deadLetters.insertBatch(
      refused.map((r) => {
        const input = documents.get(r.item)!;
        return refusedLetter(r, input.document, input.from?.stream ?? "opensearch", now);
      }),
    );
  }

  /** Drops the indices wholly older than `cutoff`, then deletes up to `limit` older observations from the ones it cuts. */
  async deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    const { client, layout } = this.options;
    const listed = (await client.ok(
      "GET",
      `/_cat/indices/${allPattern(layout)}?format=json&h=index,docs.count&expand_wildcards=open`,
    )) as { index: string; "docs.count": string | null }[];
    let deleted = 0;
    const cut: string[] = [];
    for (const { index, "docs.count": docs } of listed) {
      const info = parseIndex(layout, index);
      if (info === undefined || info.from >= cutoff) continue;
      if (info.to <= cutoff) {
        await client.ok("DELETE", `/${index}`);
        deleted += Number(docs ?? 0);
      } else cut.push(index);
    }
    if (cut.length > 0) {
      const answer = (await client.ok(
        "POST",
        `/${cut.join(",")}/_delete_by_query?conflicts=proceed&refresh=true&max_docs=${limit}`,
        { json: { query: { range: { timestamp: { lt: cutoff, format: "epoch_millis" } } } } },
      )) as { deleted?: number };
      deleted += answer.deleted ?? 0;
    }
    return deleted;
  }

  async count(): Promise<number> {
    const { client, layout } = this.options;
    const body = (await client.ok(
      "GET",
      `/${allPattern(layout)}/_count?ignore_unavailable=true&allow_no_indices=true`,
    )) as {
      count: number;
    };
    return body.count;
  }

  /** Makes everything indexed so far searchable. */
  async maintain(): Promise<void> {
    await this.options.client.ok(
      "POST",
      `/${allPattern(this.options.layout)}/_refresh?ignore_unavailable=true&allow_no_indices=true`,
    );
  }

  async close(): Promise<void> {
    await this.options.queue.stop();
  }
}
