import { rng as random } from "../../../bench/engine/workload.js";

/**
 * The data set of the FIND differential test: observations with the awkward parts
 * a dashboard meets, generated deterministically, and the index mapping
 * docs/observations.md documents for them.
 */

/** An observation document as dms stores it and OpenSearch indexes it. */
export interface ObservationDoc {
  thingName: string;
  thingType: string;
  domain: string;
  timestamp: number;
  state: Record<string, unknown>;
}

export const THING_TYPES = ["10", "20", "30"];
export const THINGS = 50;
/** From before the Europe/Oslo DST end (2026-10-25 01:00Z) to after America/New_York's (2026-11-01 06:00Z). */
export const START = Date.parse("2026-10-22T00:00:00Z");
export const SPAN = 12 * 86_400_000;
export const ZONES = ["Europe/Oslo", "America/New_York"];

const LEVELS = ["ok", "warn", "crit", "Ünïcødé", "日本語", "emoji 🚀", "a b", "OK"];
const TAGS = ["red", "green", "blue", "ß", "ñ"];
const GEOHASHES = ["u4pruydqqvj", "u4xsu", "gcpvj0duq53", "dr5regw3p", "9q8yyk8yt"];
/** Doubles at the edges a double-mapped field keeps exactly. */
const EXTREMES = [
  9007199254740991, -9007199254740991, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 0, -0.5, 1e21,
];

/** A geo point in one of the forms ES accepts, chosen by `i`. */
function geoPoint(i: number, lat: number, lon: number): unknown {
  switch (i % 4) {
    case 0:
      return `${lat},${lon}`;
    case 1:
      return GEOHASHES[i % GEOHASHES.length];
    case 2:
      return { lat, lon };
    default:
      return [lon, lat];
  }
}

/**
 * `n` observations (ids 1..n in this order), timestamps unique and increasing,
 * spread over SPAN from START, so that a sort on `timestamp` is a total order.
 */
export function generate(n: number, seed = 17): ObservationDoc[] {
  const rnd = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const step = Math.floor(SPAN / n);
  const docs: ObservationDoc[] = [];
  for (let i = 0; i < n; i++) {
    const thing = Math.floor(rnd() * THINGS);
    const thingType = THING_TYPES[thing % THING_TYPES.length]!;
    const timestamp = START + i * step + Math.floor(rnd() * (step - 1));
    const r = rnd();
    let state: Record<string, unknown>;
    if (r < 0.03) state = {};
    else if (r < 0.05) state = { temp: null, level: null };
    else if (r < 0.06) state = { tags: [] };
    else {
      state = {};
      if (rnd() < 0.92) state.temp = Math.round((rnd() * 60 - 20) * 100) / 100;
      if (rnd() < 0.95) state.count = Math.floor(rnd() * 1000);
      if (rnd() < 0.9) state.level = pick(LEVELS);
      if (rnd() < 0.8) state.on = rnd() < 0.5;
      if (rnd() < 0.7) {
        const k = 1 + Math.floor(rnd() * 4);
        const tags: string[] = [];
        for (let t = 0; t < k; t++) tags.push(pick(TAGS));
        // A keyword repeated inside one document.
        if (rnd() < 0.4) tags.push(tags[0]!);
        state.tags = tags;
      }
      if (rnd() < 0.85) {
        const lat = Math.round((59 + rnd() * 2) * 1e6) / 1e6;
        const lon = Math.round((10 + rnd() * 2) * 1e6) / 1e6;
        state.loc = geoPoint(i, lat, lon);
      }
      if (rnd() < 0.6) {
        const k = 1 + Math.floor(rnd() * 3);
        state.parts = Array.from({ length: k }, () => ({
          type: pick(["fan", "pump", "valve"]),
          state: pick(["on", "off"]),
          v: Math.floor(rnd() * 100),
        }));
      }
      if (rnd() < 0.02) state.extreme = pick(EXTREMES);
      if (rnd() < 0.5) state.reading = { value: Math.floor(rnd() * 50), unit: pick(["C", "F"]) };
    }
    docs.push({
      thingName: `thing-${String(thing).padStart(2, "0")}`,
      thingType,
      domain: "acme",
      timestamp,
      state,
    });
  }
  return docs;
}

/**
 * The OpenSearch index mapping docs/observations.md documents: `timestamp` a date,
 * the envelope keywords, and under `state` a resource takes the type of its JSON
 * value (strings keyword, numbers double, booleans boolean, objects object), geo
 * resources named as geo_point.
 */
export function indexMapping(geoFields: readonly string[]): Record<string, unknown> {
  return {
    settings: { number_of_shards: 1, number_of_replicas: 0 },
    mappings: {
      date_detection: false,
      properties: {
        timestamp: { type: "date" },
        thingName: { type: "keyword" },
        thingType: { type: "keyword" },
        domain: { type: "keyword" },
        state: {
          type: "object",
          properties: Object.fromEntries(geoFields.map((f) => [f, { type: "geo_point" }])),
        },
      },
      dynamic_templates: [
        { strings: { match_mapping_type: "string", mapping: { type: "keyword" } } },
        { integers: { match_mapping_type: "long", mapping: { type: "double" } } },
        { doubles: { match_mapping_type: "double", mapping: { type: "double" } } },
      ],
    },
  };
}
