import { folderPrefix } from "./keys.js";
import type { ListQuery } from "./store.js";

// The highest code point: every key with the prefix sorts below prefix + this in byte order.
const TOP = "\u{10FFFF}";

/**
 * The key range a listing of one folder of one owner covers (`lo` inclusive, `hi` exclusive), so
 * that the key index does the work; undefined when the listing spans folders or owners.
 */
export function listingKeyRange(query: ListQuery): { lo: string; hi: string } | undefined {
  const only = query.folders.length === 1 ? query.folders[0]! : undefined;
  if (!only) return undefined;
  const ownerless = only.folder === "public" || only.folder === "root";
  if (!ownerless && (only.owners === "*" || only.owners.length !== 1)) return undefined;
  const lo = folderPrefix(only.folder, only.owners === "*" ? "" : only.owners[0]!) + query.namePrefix;
  return { lo, hi: lo + TOP };
}
