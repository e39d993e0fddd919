import type { Logger } from "../observability/index.js";
import type { ResourceDefinition } from "../things/index.js";
import type { OpenSearchClient } from "./client.js";
import { templateName, typePattern, type IndexLayout } from "./indices.js";
import { indexTemplate, typeMapping } from "./mapping.js";

export interface TemplatesOptions {
  client: OpenSearchClient;
  layout: IndexLayout;
  replicas: number;
  /** A thing type's resources as the registry holds them now (none for a type it does not know). */
  resourcesOf: (thingType: string) => readonly ResourceDefinition[];
  logger: Logger;
}

/**
 * Keeps each thing type's index template as its resources declare: put before the first
 * observation of the type is indexed (an index takes its template when `_bulk` creates it),
 * and again when the type changes, when the new resources are also added to its existing
 * indices where they do not clash with what those indices mapped already.
 */
export class IndexTemplates {
  /** Thing types whose template is in place, each with the put that made it. */
  private readonly ensured = new Map<string, Promise<void>>();

  constructor(private readonly options: TemplatesOptions) {}

  /** Resolves once every given thing type has its template. */
  async ensure(thingTypes: Iterable<string>): Promise<void> {
    const puts: Promise<void>[] = [];
    for (const t of thingTypes) {
      let put = this.ensured.get(t);
      if (put === undefined) {
        put = this.put(t);
        this.ensured.set(t, put);
        // A failed put is tried again by the next ensure.
        put.catch(() => {
          if (this.ensured.get(t) === put) this.ensured.delete(t);
        });
      }
      puts.push(put);
    }
    await Promise.all(puts);
  }

  /**
   * The thing type's resources changed: its template again, and the new fields on its indices.
   * Only where this process indexed the type already; elsewhere its first `ensure` puts them.
   */
  async changed(thingType: string): Promise<void> {
    if (!this.ensured.has(thingType)) return;
    this.ensured.delete(thingType);
    await this.ensure([thingType]);
    const { client, layout, resourcesOf, logger } = this.options;
    const pattern = typePattern(layout, thingType);
    const answer = await client.call("PUT", `/${pattern}/_mapping?allow_no_indices=true&ignore_unavailable=true`, {
      json: typeMapping(resourcesOf(thingType)),
    });
    if (answer.status >= 300) {
      // A field its indices mapped otherwise already: the next period's index takes the declaration.
      logger.warn(
        { thingType, status: answer.status, answer: answer.body },
        "new resources not added to current indices",
      );
    }
  }

  private async put(thingType: string): Promise<void> {
    const { client, layout, replicas, resourcesOf } = this.options;
    await client.ok("PUT", `/_index_template/${encodeURIComponent(templateName(layout, thingType))}`, {
      json: indexTemplate([typePattern(layout, thingType)], resourcesOf(thingType), replicas),
    });
  }
}
