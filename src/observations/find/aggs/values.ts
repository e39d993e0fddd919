import { DEFAULT_DATE_FORMAT, parseFormat, type DateFormat } from "../dates.js";
import { badQuery, onlyKeys, stringAt, type Json } from "../errors.js";
import { accessor, isDateField, toNumber, type Doc } from "../fields.js";

/** The numbers of a field as metrics and histograms read them, with its format. */
export interface ValueSource {
  field: string;
  /** Set once a boolean value is read: the field is then mapped boolean. */
  booleans: boolean;
  date: boolean;
  format: DateFormat | undefined;
  /** The value of a document without one, if given. */
  missing: number | undefined;
  values(doc: Doc): number[];
}

export function valueSource(body: Json, where: string, extra: string[]): ValueSource {
  onlyKeys(body, ["field", "missing", "format", ...extra], where);
  if (body.script !== undefined) throw badQuery(`[${where}] scripts are not supported`);
  const field = stringAt(body.field, `${where}.field`);
  const date = isDateField(field);
  const format =
    body.format === undefined
      ? date
        ? DEFAULT_DATE_FORMAT
        : undefined
      : parseFormat(stringAt(body.format, `${where}.format`));
  const get = accessor(field);
  const missing = body.missing === undefined ? undefined : toNumber(body.missing);
  const src: ValueSource = {
    field,
    booleans: false,
    date,
    format: date ? format : undefined,
    missing,
    values: (doc) => {
      const vs = get(doc);
      const out: number[] = [];
      for (const v of vs) {
        if (typeof v === "boolean") src.booleans = true;
        const n = toNumber(v);
        if (n !== undefined) out.push(n);
      }
      if (out.length === 0 && missing !== undefined) out.push(missing);
      return out;
    },
  };
  return src;
}
