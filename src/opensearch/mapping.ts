import type { DataType, ResourceDefinition } from "../things/index.js";

/**
 * The index template of one thing type's indices. Each declared resource is mapped as its type
 * says (`state.<name>`); what no resource declares is mapped by its JSON value as the embedded
 * evaluator reads it: strings as keywords (`match` compares whole values), numbers as doubles,
 * booleans as booleans, objects as objects; `timestamp` is a date, the envelope keywords.
 * Malformed values of a mapped field (a string where the field took numbers first) are kept in
 * `_source` and left out of the index, rather than costing the whole observation.
 */
export function indexTemplate(
  patterns: readonly string[],
  resources: readonly ResourceDefinition[],
  replicas: number,
): Record<string, unknown> {
  return {
    index_patterns: patterns,
    template: {
      settings: {
        number_of_shards: 1,
        number_of_replicas: replicas,
        "mapping.ignore_malformed": true,
      },
      mappings: typeMapping(resources),
    },
    _meta: { managedBy: "dms" },
  };
}

/**
 * The field that orders an export's pages after the timestamp: the document id, as a keyword with
 * doc values (no `_id` field data is loaded). It is in `_source`, which OpenSearch then keeps as
 * the bytes it was sent (a `_source` filter in the mapping would store it re-serialized, its keys
 * out of order); answers leave it out.
 */
export const ID_FIELD = "dmsId";

/** The mapping of a thing type's indices (also what a new resource adds to its current indices). */
export function typeMapping(resources: readonly ResourceDefinition[]): Record<string, unknown> {
  return {
    dynamic: true,
    date_detection: false,
    numeric_detection: false,
    properties: {
      [ID_FIELD]: { type: "keyword" },
      timestamp: { type: "date", format: "strict_date_optional_time||epoch_millis" },
      thingName: { type: "keyword" },
      thingType: { type: "keyword" },
      domain: { type: "keyword" },
      state: { type: "object", properties: stateProperties(resources) },
    },
    dynamic_templates: [
      { strings: { match_mapping_type: "string", mapping: { type: "keyword" } } },
      // JSON numbers are doubles to the embedded evaluator, whole or not.
      { integers: { match_mapping_type: "long", mapping: { type: "double" } } },
      { doubles: { match_mapping_type: "double", mapping: { type: "double" } } },
    ],
  };
}

/** Declared types as OpenSearch field types; `unknown` leaves the field to its values. */
const FIELD_TYPES: Record<DataType, Record<string, unknown> | undefined> = {
  long: { type: "long" },
  double: { type: "double" },
  string: { type: "keyword" },
  boolean: { type: "boolean" },
  geo_point: { type: "geo_point" },
  date: { type: "date", format: "strict_date_optional_time||epoch_millis" },
  unknown: undefined,
};

function stateProperties(resources: readonly ResourceDefinition[]): Record<string, unknown> {
  // `latlng` is the thing's position whatever its declaration: the engine refuses one that is not a geo point.
  const out: Record<string, unknown> = { latlng: { type: "geo_point" } };
  for (const r of resources) {
    const field = FIELD_TYPES[r.dataType];
    // A dotted name is a path of objects to OpenSearch; it is left to its values as it comes.
    if (field !== undefined && !r.name.includes(".") && r.name !== "latlng") out[r.name] = field;
  }
  return out;
}
