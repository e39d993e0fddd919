/**
 * The observations of bench/find: `rows` readings over 30 days from 5 thing types of
 * 100 things each, drawn from one seed, so that every run (and bench/find/profile.ts)
 * makes the same ones.
 */
import type { ObservationDocument } from "../../src/observations/index.js";

export const SEED = 42;
export const DAYS = 30;
export const DAY = 86_400_000;
export const START = Date.parse("2026-01-01T00:00:00Z");
export const THING_TYPES = ["1", "2", "3", "4", "5"];
export const THINGS_PER_TYPE = 100;

/** The j-th observation of `rows`; called in order from 0, it draws the same random numbers every run. */
export function observations(rows: number): (j: number) => ObservationDocument {
  const step = (DAYS * DAY) / rows;
  let seed = SEED;
  const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return (j) => {
    const thingType = THING_TYPES[j % THING_TYPES.length]!;
    const thingName = `thing-${thingType}-${Math.floor(rnd() * THINGS_PER_TYPE)}`;
    const timestamp = START + Math.floor(j * step);
    const temp = Math.round(rnd() * 4000) / 100 - 5;
    return {
      thingName,
      thingType,
      domain: "root",
      timestamp,
      state: { temp, latlng: `59.9${j % 10},10.7${j % 7}` },
    };
  };
}
