/**
 * Producer-side schemas of an observation (DESIGN.md "Observations") for tests that put messages in the
 * Confluent wire format on Kafka. Register one under the topic's value subject
 * (`${topic}-value`, Confluent's TopicNameStrategy) and encode with the returned id:
 *
 *   const { id } = await registry.register(
 *     { type: SchemaType.AVRO, schema: JSON.stringify(OBSERVATION_AVRO_SCHEMA) },
 *     { subject: observationSubject(topic) },
 *   );
 *   const value = await registry.encode(id, observation);
 *
 * Registering the same schema again under the same subject returns the same id.
 */

/**
 * A resource value: Avro needs every type a state map may hold spelled out. The branches are all of
 * different kinds (null, boolean, number, string, record, array), so avsc reads and writes them as
 * plain values (no `{ double: 21.5 }` wrappers). The record and the array are two of the geo_point forms
 * of `latlng` (`{lat, lon}` and `[lon, lat]`); the third ("lat,lon") is a string. Numbers are doubles:
 * a `long` branch next to `double` would make the union ambiguous and force wrappers, and every JS
 * number fits a double.
 */
const AVRO_STATE_VALUE = [
  "null",
  "boolean",
  "double",
  "string",
  {
    type: "record",
    name: "GeoPoint",
    fields: [
      { name: "lat", type: "double" },
      { name: "lon", type: "double" },
    ],
  },
  { type: "array", items: "double" },
];

/** The same union once GeoPoint is defined (Avro names may be declared only once per schema). */
const AVRO_STATE_VALUE_REF = [
  "null",
  "boolean",
  "double",
  "string",
  "dms.GeoPoint",
  { type: "array", items: "double" },
];

/**
 * Avro schema of an observation. `timestamp` is epoch milliseconds (Avro producers send numbers; ISO
 * strings are for JSON). `nested` defaults to [] so producers may leave it out; decoded Avro records
 * always carry it, as [] when it was absent.
 */
export const OBSERVATION_AVRO_SCHEMA = {
  type: "record" as const,
  name: "Observation",
  namespace: "dms",
  fields: [
    { name: "thingName", type: "string" },
    { name: "timestamp", type: "long", doc: "epoch milliseconds" },
    { name: "state", type: { type: "map", values: AVRO_STATE_VALUE } },
    {
      name: "nested",
      type: {
        type: "array",
        items: {
          type: "record",
          name: "NestedObject",
          fields: [
            { name: "type", type: ["null", "string"], default: null, doc: "absent: untyped" },
            { name: "id", type: ["null", "string"], default: null },
            { name: "state", type: { type: "map", values: AVRO_STATE_VALUE_REF } },
          ],
        },
      },
      default: [],
    },
  ],
};

const JSON_STATE = {
  type: "object",
  additionalProperties: { $ref: "#/definitions/value" },
};

/**
 * JSON Schema (draft-07) of an observation, as the engine accepts it from JSON producers: `timestamp`
 * epoch ms or an ISO 8601 string, `latlng` in any geo_point form. No `format` keywords: the client
 * compiles schemas with Ajv in strict mode without the formats plugin, and an unknown format throws.
 */
export const OBSERVATION_JSON_SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  title: "Observation",
  type: "object",
  required: ["thingName", "timestamp", "state"],
  properties: {
    thingName: { type: "string", minLength: 1 },
    timestamp: { anyOf: [{ type: "integer" }, { type: "string" }] },
    state: JSON_STATE,
    nested: {
      type: "array",
      items: {
        type: "object",
        required: ["state"],
        properties: { type: { type: "string" }, id: { type: "string" }, state: JSON_STATE },
      },
    },
  },
  definitions: {
    value: {
      anyOf: [
        { type: "null" },
        { type: "boolean" },
        { type: "number" },
        { type: "string" },
        {
          type: "object",
          required: ["lat", "lon"],
          properties: { lat: { type: "number" }, lon: { type: "number" } },
        },
        { type: "array", items: { type: "number" }, minItems: 2, maxItems: 2 },
      ],
    },
  },
};

/** The value subject of a topic under Confluent's default TopicNameStrategy. */
export function observationSubject(topic: string): string {
  return `${topic}-value`;
}
