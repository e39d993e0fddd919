import { isLive, type ThingState, type ThresholdState } from "./store.js";

/**
 * A thing's document: its state, its nested objects and its live thresholds. The thresholds
 * go flat, five values an entry (ruleId, count, lastFiredAt, lastSeq, version; null where the
 * entry has none): the JSON of an object per entry was the larger part of the engine thread's
 * work on a flush, and of the bytes written. Documents of earlier versions hold an object per
 * entry; `fromRow` reads both.
 */
interface StateDoc {
  state: Record<string, unknown>;
  nested?: ThingState["nested"];
  thresholds?: (string | number | null)[] | ThresholdState[];
}

/** Values per threshold entry in a document's flat list. */
const ENTRY = 5;

/** A state's row values, as `RowValues` puts them. */
export function thingValues(t: ThingState, into: unknown[], at: number): void {
  into[at] = t.thingName;
  into[at + 1] = t.timestamp;
  into[at + 2] = t.seq ?? 0;
  into[at + 3] = t.lastSource ?? null;
  into[at + 4] = t.lastOffset ?? null;
  into[at + 5] = stateDoc(t);
}

/**
 * The row's document (`StateDoc`) as JSON, one JSON.stringify of it: one flat string, which the
 * post to the writer thread or the bind takes without first joining a tree of short strings.
 * `undefined` leaves a key out, as the document has no `nested` or `thresholds` where the thing has none.
 */
export function stateDoc(t: ThingState): string {
  const list = t.thresholds;
  let flat: (string | number | null)[] | undefined;
  if (list !== undefined)
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      // Inert entries are the engine's spare slots: no entry means the same.
      if (isLive(e)) (flat ??= []).push(e.ruleId, e.count, e.lastFiredAt, e.lastSeq ?? null, e.version ?? null);
    }
  const doc: StateDoc = { state: t.state, nested: t.nested || undefined, thresholds: flat };
  return JSON.stringify(doc);
}

/** A thing's row as both backends read it (ids and times as numbers). */
export interface ThingRow {
  thing_name: string;
  ts: number;
  seq: number;
  last_source: string | null;
  last_offset: number | null;
  doc: string;
}

/** The state a row holds. */
export function fromRow(r: ThingRow): ThingState {
  const doc = JSON.parse(r.doc) as StateDoc;
  const state: ThingState = { thingName: r.thing_name, timestamp: r.ts, state: doc.state, seq: r.seq };
  if (doc.nested) state.nested = doc.nested;
  if (doc.thresholds?.length) state.thresholds = thresholdsOf(doc.thresholds);
  if (r.last_source !== null && r.last_offset !== null) {
    state.lastSource = r.last_source;
    state.lastOffset = r.last_offset;
  }
  return state;
}

function thresholdsOf(stored: NonNullable<StateDoc["thresholds"]>): ThresholdState[] {
  if (typeof stored[0] === "object") return stored as ThresholdState[];
  const flat = stored as (string | number | null)[];
  const list: ThresholdState[] = [];
  for (let i = 0; i + ENTRY <= flat.length; i += ENTRY) {
    const e: ThresholdState = {
      ruleId: flat[i] as string,
      count: flat[i + 1] as number,
      lastFiredAt: flat[i + 2] as number,
    };
    if (flat[i + 3] !== null) e.lastSeq = flat[i + 3] as number;
    if (flat[i + 4] !== null) e.version = flat[i + 4] as number;
    list.push(e);
  }
  return list;
}
