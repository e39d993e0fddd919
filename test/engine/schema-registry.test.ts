import { randomUUID } from "node:crypto";
import { describe, it, expect, beforeAll } from "vitest";
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import { SCHEMA_REGISTRY_START_TIMEOUT_MS, startSchemaRegistry } from "../support/schema-registry.js";
import {
  OBSERVATION_AVRO_SCHEMA,
  OBSERVATION_JSON_SCHEMA,
  observationSubject,
} from "../support/observation-schemas.js";

/** Every state value kind an observation carries, including the three geo_point forms and nesting. */
const observation = {
  thingName: "t1",
  timestamp: 1763000000000,
  state: {
    temp: 21.5,
    count: 7,
    mode: "eco",
    on: true,
    cleared: null,
    latlng: "59.91,10.75",
    pos: { lat: 59.91, lon: 10.75 },
    lonlat: [10.75, 59.91],
  },
  nested: [
    { type: "door", id: "front", state: { open: 1 } },
    { type: null, id: null, state: { battery: 0.8 } },
  ],
};

/** In JSON an untyped nested object just leaves `type` (and `id`) out. */
const jsonObservation = {
  ...observation,
  nested: [{ type: "door", id: "front", state: { open: 1 } }, { state: { battery: 0.8 } }],
};

/** Confluent wire format: magic byte 0, 4-byte big-endian schema id, then the payload. */
function wireMessage(id: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(0, 0);
  header.writeInt32BE(id, 1);
  return Buffer.concat([header, payload]);
}

describe("Confluent-compatible schema registry (Apicurio ccompat)", () => {
  let url = "";
  // A separate client decodes, so the schema comes from the registry by id, not from the encoder's cache.
  const decoder = (): SchemaRegistry => new SchemaRegistry({ host: url });
  const subject = (kind: string): string => observationSubject(`dms-sr-test-${kind}-${randomUUID()}`);

  beforeAll(async () => {
    url = await startSchemaRegistry();
  }, SCHEMA_REGISTRY_START_TIMEOUT_MS);

  it("serves the Confluent API at the returned URL", async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/apis\/ccompat\/v7$/);
    const res = await fetch(`${url}/subjects`);
    expect(res.status).toBe(200);
    expect(Array.isArray(await res.json())).toBe(true);
  });

  it("round-trips an observation through an Avro schema", async () => {
    const registry = new SchemaRegistry({ host: url });
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(OBSERVATION_AVRO_SCHEMA) },
      { subject: subject("avro") },
    );

    const bytes = await registry.encode(id, observation);
    expect(bytes.readUInt8(0)).toBe(0);
    expect(bytes.readInt32BE(1)).toBe(id);

    expect(await decoder().decode(bytes)).toEqual(observation);
  });

  it("decodes an Avro observation without nested objects as nested: []", async () => {
    const registry = new SchemaRegistry({ host: url });
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(OBSERVATION_AVRO_SCHEMA) },
      { subject: subject("avro-flat") },
    );
    const flat = { thingName: "e1", timestamp: 1763000000001, state: { temp: -3 } };

    expect(await decoder().decode(await registry.encode(id, flat))).toEqual({ ...flat, nested: [] });
  });

  it("round-trips an observation through a JSON Schema, ISO timestamps included", async () => {
    const registry = new SchemaRegistry({ host: url });
    const { id } = await registry.register(
      { type: SchemaType.JSON, schema: JSON.stringify(OBSERVATION_JSON_SCHEMA) },
      { subject: subject("json") },
    );

    for (const obs of [jsonObservation, { ...jsonObservation, timestamp: "2025-11-13T02:13:20.000Z" }]) {
      const bytes = await registry.encode(id, obs);
      expect(bytes.readInt32BE(1)).toBe(id);
      expect(JSON.parse(bytes.subarray(5).toString("utf8"))).toEqual(obs);
      expect(await decoder().decode(bytes)).toStrictEqual(obs);
    }
  });

  it("gives the same id when a schema is registered again, and reports it as the subject's latest", async () => {
    const registry = new SchemaRegistry({ host: url });
    const s = subject("idempotent");
    const schema = { type: SchemaType.JSON, schema: JSON.stringify(OBSERVATION_JSON_SCHEMA) } as const;

    const first = await registry.register(schema, { subject: s });
    const again = await new SchemaRegistry({ host: url }).register(schema, { subject: s });

    expect(again.id).toBe(first.id);
    expect(await decoder().getLatestSchemaId(s)).toBe(first.id);
  });

  // What a consumer meets in bad messages: these must fail decode (for a dead letter), not hang or pass.
  it("rejects bytes that break the JSON Schema, an unknown schema id and a missing magic byte", async () => {
    const registry = new SchemaRegistry({ host: url });
    const { id } = await registry.register(
      { type: SchemaType.JSON, schema: JSON.stringify(OBSERVATION_JSON_SCHEMA) },
      { subject: subject("bad") },
    );
    const noThing = Buffer.from(JSON.stringify({ timestamp: 1, state: {} }));
    const badPoint = Buffer.from(JSON.stringify({ thingName: "t1", timestamp: 1, state: { p: { lat: 1 } } }));

    await expect(decoder().decode(wireMessage(id, noThing))).rejects.toThrow(/invalid payload/);
    await expect(decoder().decode(wireMessage(id, badPoint))).rejects.toThrow(/invalid payload/);
    await expect(decoder().decode(wireMessage(2_000_000_000, noThing))).rejects.toThrow();
    await expect(decoder().decode(Buffer.from(JSON.stringify(observation)))).rejects.toThrow();
  });
});
