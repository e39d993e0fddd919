import { ApiError } from "../../errors/index.js";

/** Every fault of a FIND request is INVALID_ARGUMENTS on `query`, naming the clause. */
export function badQuery(why: string): ApiError {
  return new ApiError("INVALID_ARGUMENTS", `Property query is invalid: ${why}`, "query");
}

export type Json = Record<string, unknown>;

/**
 * `table[key]` for a key the request chose, or undefined: never an inherited
 * member (`constructor`, `__proto__`, `toString`), which an object literal
 * would hand back for such a name (`aggs: {"a": {"constructor": {}}}` answered 500).
 */
export function own<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function objectAt(v: unknown, where: string): Json {
  if (!isObject(v)) throw badQuery(`[${where}] must be an object`);
  return v;
}

/** The single `{name: body}` entry of a clause such as `{"term": {...}}`. */
export function single(v: unknown, where: string): [string, unknown] {
  const o = objectAt(v, where);
  const entries = Object.entries(o);
  if (entries.length !== 1) throw badQuery(`[${where}] must hold exactly one clause`);
  return entries[0]!;
}

export function numberAt(v: unknown, where: string): number {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n)) throw badQuery(`[${where}] must be a number`);
  return n;
}

export function intAt(v: unknown, where: string, min = 0): number {
  const n = numberAt(v, where);
  if (!Number.isInteger(n) || n < min) throw badQuery(`[${where}] must be an integer >= ${min}`);
  return n;
}

export function stringAt(v: unknown, where: string): string {
  if (typeof v !== "string") throw badQuery(`[${where}] must be a string`);
  return v;
}

/** Refuses keys a clause does not know, so that nothing is silently ignored. */
export function onlyKeys(o: Json, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw badQuery(`[${where}] does not support [${k}]`);
}
