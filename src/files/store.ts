import type { Readable } from "node:stream";
import type { Folder, FileLocation } from "./keys.js";

/** One stored version of a file. */
export interface FileVersion extends FileLocation {
  key: string;
  versionId: string;
  size: number;
  /** Hex MD5 of the content, unquoted. */
  md5: string;
  contentType: string | null;
  contentEncoding: string | null;
  contentDisposition: string | null;
  /** Epoch milliseconds. */
  lastModified: number;
}

export interface PutOptions {
  contentType?: string | undefined;
  contentEncoding?: string | undefined;
  contentDisposition?: string | undefined;
  /** Base64 MD5 the body must have (Content-MD5); a mismatch stores nothing. */
  contentMD5?: string | undefined;
  /** Refuse a body over this many bytes. */
  maxBytes?: number | undefined;
}

/** Which files a listing covers: per folder, its owners or every owner (`"*"`). */
export interface ListQuery {
  folders: readonly { folder: Folder; owners: readonly string[] | "*" }[];
  /** Prefix of the file name inside its folder. */
  namePrefix: string;
  /** List keys after this one (the continuation point). */
  after?: string | undefined;
  limit: number;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

/** Why a write was refused; the transfer route turns it into the HTTP answer. */
export class PutError extends Error {
  constructor(
    readonly reason: "BAD_DIGEST" | "TOO_LARGE",
    message: string,
  ) {
    super(message);
  }
}

/**
 * The file store behind the routes. Objects are versioned: a put adds the
 * newest version, a read or listing sees the newest, a removal drops the
 * newest (or all). Local disk implements it; an S3-compatible backend can too.
 */
export interface FileStore {
  put(key: string, body: Readable, options?: PutOptions): Promise<FileVersion>;
  /** The newest version, or undefined. */
  head(key: string): Promise<FileVersion | undefined>;
  /** The newest version and a stream of its bytes (or of `range`), or undefined. */
  read(key: string, range?: ByteRange): Promise<{ version: FileVersion; stream: Readable } | undefined>;
  /** Newest versions, by key, ascending. */
  list(query: ListQuery): Promise<FileVersion[]>;
  /** Every version, newest first. */
  versions(key: string): Promise<FileVersion[]>;
  /** Removes the newest version, or all; answers how many were removed. */
  remove(key: string, allVersions: boolean): Promise<number>;
}
