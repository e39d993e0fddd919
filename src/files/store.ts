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

/** A version as its bytes were written, before the metadata store records it. */
export type NewFileVersion = Omit<FileVersion, keyof FileLocation | "key">;

/**
 * Where the metadata of file versions is kept (which versions each key has, which is the newest),
 * apart from their bytes: a `FileStore` over local disk or an object store records them here.
 * Every method answers asynchronously, as a networked database would, each one atomic.
 */
export interface FileMetadataStore {
  /** Records a version whose bytes are in place; it becomes the key's newest. Answers it as stored. */
  addVersion(key: string, location: FileLocation, version: NewFileVersion): Promise<FileVersion>;
  /** The newest version, or undefined. */
  newest(key: string): Promise<FileVersion | undefined>;
  /** Newest versions, by key, ascending. */
  list(query: ListQuery): Promise<FileVersion[]>;
  /** Every version, newest first. */
  versions(key: string): Promise<FileVersion[]>;
  /** Drops the newest version, or all; answers the version ids dropped, whose bytes may go now. */
  removeVersions(key: string, allVersions: boolean): Promise<string[]>;
  /** Every version id recorded: bytes without one are orphans. */
  versionIds(): Promise<Set<string>>;
}
