import { onlyKeys, stringAt } from "../../errors.js";
import { accessor, type Doc } from "../../fields.js";
import { withRows, type Builder, type Output } from "../types.js";

/**
 * The values doc values hold: numbers and booleans are sorted numeric doc values, which
 * keep a repeated value; keywords are sorted set doc values, which hold each distinct
 * value of a document once.
 */
export const valueCount: Builder = (body, b) => {
  onlyKeys(body, ["field", "missing"], b.where);
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const docs = (docs: Doc[]): Output => {
    let n = 0;
    for (const d of docs) {
      const vs = get(d);
      let keywords: Set<unknown> | undefined;
      for (const v of vs) {
        if (typeof v === "string") (keywords ??= new Set()).add(v);
        else n++;
      }
      if (keywords) n += keywords.size;
    }
    return { value: n };
  };
  // A column holds one value a match, counted once either way.
  return withRows(docs, ({ matches, rows }) => {
    const column = matches.column(field);
    let n = 0;
    if (column.kind === "number") for (const m of rows) n += column.values[m] === column.values[m] ? 1 : 0;
    else if (column.kind === "keyword") for (const m of rows) n += column.codes[m]! >= 0 ? 1 : 0;
    return { value: n };
  });
};
