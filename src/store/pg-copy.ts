const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/** A value as COPY's text format takes it: backslash, tab and line ends escaped. */
export function pgCopyField(value: string): string {
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : value;
}

/** COPY's text format for NULL. */
export const PG_COPY_NULL = "\\N";
