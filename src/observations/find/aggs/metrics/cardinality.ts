import { onlyKeys, stringAt } from "../../errors.js";
import { accessor } from "../../fields.js";
import type { RowSet } from "../../vector/matches.js";
import { withRows, type Builder, type Output } from "../types.js";

/** Exact below ES's default precision_threshold (3000), which is where dashboards live. */
export const cardinality: Builder = (body, b) => {
  onlyKeys(body, ["field", "missing", "precision_threshold"], b.where);
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const missing = body.missing;
  const rows = ({ matches, rows }: RowSet): Output => {
    const column = matches.column(field);
    const seen = new Set<unknown>();
    let none = false;
    if (column.kind === "number")
      for (const m of rows) {
        const v = column.values[m]!;
        if (v === v) seen.add(v);
        else none = true;
      }
    else if (column.kind === "keyword") {
      const met = new Uint8Array(column.dictionary.length);
      for (const m of rows) {
        const c = column.codes[m]!;
        if (c >= 0) met[c] = 1;
        else none = true;
      }
      met.forEach((x, c) => x && seen.add(column.dictionary[c]));
    } else none = rows.length > 0;
    // Added last, as a value it may equal was added before it in the document path too: a set ignores order.
    if (none && missing !== undefined) seen.add(missing);
    return { value: seen.size };
  };
  return withRows((docs) => {
    const seen = new Set<unknown>();
    for (const d of docs) {
      const vs = get(d);
      if (vs.length === 0 && missing !== undefined) seen.add(missing);
      for (const v of vs) seen.add(typeof v === "object" ? JSON.stringify(v) : v);
    }
    return { value: seen.size };
  }, rows);
};
