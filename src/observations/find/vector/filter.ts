/**
 * A query tested over a day's columns: each clause's shape (`ClauseShape`, set by
 * query.ts with the very test the document path applies to a value) becomes a test
 * of a row number. A keyword column tests its dictionary once and its rows by code.
 */
import { DayColumns } from "../../columns.js";
import type { ColumnDay } from "../../reader.js";
import type { Matcher } from "../query.js";

/** A test of a row; true or false when every row answers the same. */
type RowTest = ((row: number) => boolean) | boolean;

/** Whether every clause of a query has a shape the columns answer. */
export function shaped(m: Matcher): boolean {
  const shape = m.shape;
  if (!shape) return false;
  if (shape.kind !== "bool") return true;
  return [...shape.must, ...shape.should, ...shape.mustNot].every(shaped);
}

export interface RowScope {
  thingTypes: readonly string[];
  thingNames: readonly string[] | undefined;
}

/** The rows of a day's slice in scope that match, ascending; `tick` is called as it goes. */
export function matchingRows(day: ColumnDay, matcher: Matcher, scope: RowScope, tick: () => void): Int32Array {
  const { columns, from, end } = day;
  const test = rowTest(matcher, columns);
  if (test === false) return new Int32Array(0);
  const types = DayColumns.mask(columns.thingTypes, scope.thingTypes);
  const thingType = columns.thingType;
  // Things named: their rows only; one thing type of several: its rows (one group, no merge); else the window.
  const named = scope.thingNames
    ? columns.rowsOf("thingName", scope.thingNames, from, end)
    : scope.thingTypes.length === 1 && types.includes(0)
      ? columns.rowsOf("thingType", scope.thingTypes, from, end)
      : undefined;
  const count = named ? named.length : Math.max(0, end - from);
  const out = new Int32Array(count);
  let n = 0;
  for (let i = 0; i < count; i++) {
    if ((i & 65535) === 0) tick();
    const r = named ? named[i]! : from + i;
    if (types[thingType[r]!] === 0) continue;
    if (test === true || test(r)) out[n++] = r;
  }
  return out.subarray(0, n);
}

function rowTest(m: Matcher, columns: DayColumns): RowTest {
  const shape = m.shape!;
  switch (shape.kind) {
    case "all":
      return true;
    case "none":
      return false;
    case "value":
      return valueTest(columns, shape.field, shape.test);
    case "bool": {
      const must: ((r: number) => boolean)[] = [];
      for (const c of shape.must) {
        const t = rowTest(c, columns);
        if (t === false) return false;
        if (t !== true) must.push(t);
      }
      const mustNot: ((r: number) => boolean)[] = [];
      for (const c of shape.mustNot) {
        const t = rowTest(c, columns);
        if (t === true) return false;
        if (t !== false) mustNot.push(t);
      }
      const min = shape.minShould;
      const should = shape.should.map((c) => rowTest(c, columns));
      if (min > 0 && should.filter((t) => t !== false).length < min) return false;
      if (must.length === 0 && mustNot.length === 0 && min === 0) return true;
      return (r) => {
        for (const t of must) if (!t(r)) return false;
        for (const t of mustNot) if (t(r)) return false;
        if (min > 0) {
          let k = 0;
          for (const t of should) if ((t === true || (t !== false && t(r))) && ++k >= min) break;
          if (k < min) return false;
        }
        return true;
      };
    }
  }
}

/** Some value at `field` passes `test`: a column holds at most one (scalar) value a row. */
function valueTest(columns: DayColumns, field: string, test: (v: unknown) => boolean): RowTest {
  const leaf = columns.leaf(field);
  if (!leaf) return false;
  switch (leaf.kind) {
    case "number": {
      const values = leaf.values;
      return (r) => {
        const v = values[r]!;
        return v === v && test(v);
      };
    }
    case "keyword": {
      const passes = Uint8Array.from(leaf.dictionary, (v) => (test(v) ? 1 : 0));
      if (!passes.includes(1)) return false;
      const codes = leaf.codes;
      return (r) => {
        const c = codes[r]!;
        return c >= 0 && passes[c] === 1;
      };
    }
    case "mixed": {
      const values = leaf.values;
      return (r) => {
        const v = values[r];
        return v !== undefined && test(v);
      };
    }
  }
}
