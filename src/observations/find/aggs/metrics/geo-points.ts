/** The geo points of a field, from documents or from a keyword column of the matches. */
import { onlyKeys, stringAt, type Json } from "../../errors.js";
import { geoAccessor, geoPointsOf, quantize, type Doc, type GeoPoint } from "../../fields.js";
import type { RowSet } from "../../vector/matches.js";

export function geoValues(
  body: Json,
  where: string,
  extra: string[],
): { field: string; get: (doc: Doc) => GeoPoint[] } {
  onlyKeys(body, ["field", ...extra], where);
  const field = stringAt(body.field, `${where}.field`);
  const get = geoAccessor(field);
  return { field, get: (doc) => get(doc).map(quantize) };
}

/**
 * Each match's geo points from the column matches, a keyword column's parsed once per
 * value; a numeric column holds no point.
 */
export function geoRows(field: string, { matches, rows }: RowSet, visit: (p: GeoPoint) => void): void {
  const column = matches.column(field);
  if (column.kind !== "keyword") return;
  const points = column.dictionary.map((v) => geoPointsOf(v).map(quantize));
  for (const m of rows) {
    const c = column.codes[m]!;
    if (c >= 0) for (const p of points[c]!) visit(p);
  }
}
