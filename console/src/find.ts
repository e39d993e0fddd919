/** FIND requests (Elasticsearch 5.6 DSL) the console sends, and readers of their answers. */
import type { Client } from "./api.js";
import type { Observation, Thing } from "./types.js";

interface Hit<T> {
  _source: T;
}
interface SearchAnswer<T> {
  hits: { total: number; hits: Hit<T>[] };
  aggregations?: Record<string, unknown>;
}

/** How far back "last seen" looks: a thing silent for longer counts as never seen. */
export const LAST_SEEN_WINDOW = "now-30d";

export async function findThings(
  client: Client,
  prefix: string,
  size: number,
): Promise<{ things: Thing[]; total: number }> {
  const query = prefix ? { prefix: { thingName: prefix } } : { match_all: {} };
  const answer = await client.call<SearchAnswer<Thing>>("POST", "/things/find", {
    query: { size, query, sort: [{ thingName: { order: "asc" } }] },
  });
  return { things: answer.hits.hits.map((h) => h._source), total: answer.hits.total };
}

export interface Latest {
  lastSeen: number;
  state: Record<string, unknown>;
}

/** The newest observation of each of `thingNames` within the last-seen window, in one request. */
export async function latestObservations(client: Client, thingNames: readonly string[]): Promise<Map<string, Latest>> {
  const latest = new Map<string, Latest>();
  if (thingNames.length === 0) return latest;
  const answer = await client.call<SearchAnswer<Observation>>("POST", "/observations/find", {
    query: {
      size: 0,
      query: {
        bool: {
          filter: [{ range: { timestamp: { gte: LAST_SEEN_WINDOW } } }, { terms: { thingName: thingNames } }],
        },
      },
      aggs: {
        things: {
          terms: { field: "thingName", size: thingNames.length },
          aggs: { newest: { top_hits: { size: 1, sort: [{ timestamp: { order: "desc" } }] } } },
        },
      },
    },
  });
  const things = answer.aggregations?.things as
    { buckets: { key: string; newest: { hits: { hits: Hit<Observation>[] } } }[] } | undefined;
  for (const bucket of things?.buckets ?? []) {
    const doc = bucket.newest.hits.hits[0]?._source;
    if (doc) latest.set(bucket.key, { lastSeen: Number(new Date(doc.timestamp)), state: doc.state ?? {} });
  }
  return latest;
}

export interface Window {
  label: string;
  /** Date math for the range's lower bound. */
  gte: string;
  /** The histogram's interval: about a hundred points whatever the window. */
  interval: string;
}

export const WINDOWS: readonly Window[] = [
  { label: "1 hour", gte: "now-1h", interval: "1m" },
  { label: "24 hours", gte: "now-24h", interval: "15m" },
  { label: "7 days", gte: "now-7d", interval: "2h" },
  { label: "30 days", gte: "now-30d", interval: "6h" },
  { label: "1 year", gte: "now-365d", interval: "3d" },
];

export interface Series {
  times: number[];
  values: Map<string, (number | null)[]>;
}

/** Averages of `resources` per interval over the window: a year draws from as few points as an hour. */
export async function histogram(
  client: Client,
  thingName: string,
  resources: readonly string[],
  window: Window,
): Promise<Series> {
  const aggs: Record<string, unknown> = {};
  resources.forEach((r, i) => (aggs[`r${i}`] = { avg: { field: `state.${r}` } }));
  const answer = await client.call<SearchAnswer<Observation>>("POST", "/observations/find", {
    query: {
      size: 0,
      query: {
        bool: { filter: [{ range: { timestamp: { gte: window.gte } } }, { term: { thingName } }] },
      },
      aggs: { over: { date_histogram: { field: "timestamp", interval: window.interval }, aggs } },
    },
  });
  const over = answer.aggregations?.over as
    { buckets: ({ key: number } & Record<string, { value: number | null } | number>)[] } | undefined;
  const buckets = over?.buckets ?? [];
  const values = new Map<string, (number | null)[]>();
  resources.forEach((r, i) =>
    values.set(
      r,
      buckets.map((b) => (b[`r${i}`] as { value: number | null } | undefined)?.value ?? null),
    ),
  );
  return { times: buckets.map((b) => b.key / 1000), values };
}

/** The thing's newest observations in the window, oldest first (its track, and a dry run's input). */
export async function recentObservations(
  client: Client,
  thingName: string,
  gte: string,
  size: number,
): Promise<Observation[]> {
  const answer = await client.call<SearchAnswer<Observation>>("POST", "/observations/find", {
    query: {
      size,
      sort: [{ timestamp: { order: "desc" } }],
      query: { bool: { filter: [{ range: { timestamp: { gte } } }, { term: { thingName } }] } },
    },
  });
  return answer.hits.hits.map((h) => ({ ...h._source, thingName })).reverse();
}
