import { invalid } from "../errors/index.js";

/** The four folders of the file store. */
export const FOLDERS = ["public", "root", "things", "thing-types"] as const;
export type Folder = (typeof FOLDERS)[number];

/** Where a file lives: its folder, the folder's owner (thing name or thing type id, else "") and its name. */
export interface FileLocation {
  folder: Folder;
  owner: string;
  name: string;
}

export const MAX_NAME_BYTES = 1024;
// C0 controls, DEL and C1 controls: never valid in a file name.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Checks a file name (INVALID_ARGUMENTS on `property`): no `..` or `.` segment, no leading `/`, no control characters, at most 1024 bytes. */
export function checkFileName(name: string, property = "fileName"): string {
  if (name.length === 0) throw invalid(property, "empty file name");
  if (Buffer.byteLength(name, "utf8") > MAX_NAME_BYTES) throw invalid(property, `longer than ${MAX_NAME_BYTES} bytes`);
  if (CONTROL.test(name)) throw invalid(property, "control characters are not allowed");
  if (name.startsWith("/")) throw invalid(property, "absolute paths are not allowed");
  for (const segment of name.split("/")) {
    if (segment === "..") throw invalid(property, "'..' is not allowed");
    if (segment === ".") throw invalid(property, "'.' segments are not allowed");
    if (segment === "") throw invalid(property, "empty path segments ('//' or a trailing '/') are not allowed");
  }
  return name;
}

/** The folder part of a key, with its trailing `/`: `public/`, `root/`, `things/t1/`, `thing-types/10/`. */
export function folderPrefix(folder: Folder, owner: string): string {
  return folder === "public" || folder === "root" ? `${folder}/` : `${folder}/${owner}/`;
}

/** The store key (the `Key` of a file entry and the `fileName` path of the responses). */
export function keyOf(location: FileLocation): string {
  return folderPrefix(location.folder, location.owner) + location.name;
}

/** The location of a key, or undefined when the key is not one the store can hold. */
export function parseKey(key: string): FileLocation | undefined {
  const slash = key.indexOf("/");
  if (slash < 0) return undefined;
  const folder = key.slice(0, slash) as Folder;
  if (!FOLDERS.includes(folder)) return undefined;
  let owner = "";
  let name = key.slice(slash + 1);
  if (folder === "things" || folder === "thing-types") {
    const next = name.indexOf("/");
    if (next <= 0) return undefined;
    owner = name.slice(0, next);
    name = name.slice(next + 1);
  }
  try {
    checkFileName(name);
  } catch {
    return undefined;
  }
  return { folder, owner, name };
}

/** The transfer path of a key under `/storage/files/`, each segment percent-encoded. */
export function transferPath(key: string): string {
  return `${TRANSFER_PREFIX}${key.split("/").map(encodeURIComponent).join("/")}`;
}

export const TRANSFER_PREFIX = "/storage/files/";

/** The key of a raw transfer path, or undefined when it is not the canonical encoding of a valid key. */
export function keyOfTransferPath(rawPath: string): string | undefined {
  if (!rawPath.startsWith(TRANSFER_PREFIX)) return undefined;
  let key: string;
  try {
    key = rawPath.slice(TRANSFER_PREFIX.length).split("/").map(decodeURIComponent).join("/");
  } catch {
    return undefined;
  }
  // An encoded '/' inside a segment would change the key's segments: only the canonical form is accepted.
  if (transferPath(key) !== rawPath || !parseKey(key)) return undefined;
  return key;
}
