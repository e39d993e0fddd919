import { ApiError, invalid, notFound } from "../errors/index.js";
import {
  ROOT_DOMAIN,
  authorize,
  requireReadWrite,
  type Identity,
  type Principal,
  type Privilege,
} from "../auth/index.js";
import type { UrlSigner } from "../signing/index.js";
import type { ThingRegistry } from "../things/index.js";
import { checkFileName, keyOf, transferPath, type Folder } from "./keys.js";
import type { FileStore, FileVersion, ListQuery } from "./store.js";

/** The folder selector of a request: exactly one of these is given. */
export interface FolderSelector {
  public?: "true" | undefined;
  root?: "true" | undefined;
  thingName?: string | undefined;
  thingType?: string | undefined;
}

export interface ListRequest extends FolderSelector {
  listAll?: "true" | undefined;
  prefix?: string | undefined;
  maxKeys: number;
  continuationToken?: string | undefined;
}

export interface UploadHeaders {
  contentDisposition?: string | undefined;
  contentEncoding?: string | undefined;
  contentMD5?: string | undefined;
  contentType?: string | undefined;
}

export interface FileEntry {
  Key: string;
  LastModified: string;
  ETag: string;
  Size: number;
  url: string;
  folder?: Folder;
  thingName?: string;
  thingType?: string;
}

export interface ListResponse {
  continuationToken?: string;
  nextContinuationToken?: string;
  encodingType: "url";
  isTruncated: boolean;
  keyCount: number;
  maxKeys: number;
  prefix?: string;
  files: FileEntry[];
}

/** Largest single upload, as S3 allows for one PUT. */
export const MAX_UPLOAD_BYTES = 5 * 1024 ** 3;

const SELECTORS = ["public", "root", "thingName", "thingType"] as const;

const HEADER_OF: Record<keyof UploadHeaders, string> = {
  contentDisposition: "content-disposition",
  contentEncoding: "content-encoding",
  contentMD5: "content-md5",
  contentType: "content-type",
};

/**
 * Files (version 2): which folder a request names, whether the caller may use
 * it, and the signed URLs of its files. Bytes move through `/storage/files/`.
 */
export class Files {
  constructor(
    readonly store: FileStore,
    private readonly signer: UrlSigner,
    private readonly registry: ThingRegistry,
    private readonly identity: Pick<Identity, "domains">,
  ) {}

  async list(principal: Principal, request: ListRequest): Promise<ListResponse> {
    const given = [...SELECTORS, "listAll" as const].filter((s) => request[s] !== undefined);
    if (given.length !== 1) {
      throw new ApiError(
        "INVALID_ARGUMENTS",
        `Exactly one of listAll, public, root, thingName, thingType is required (got ${given.length === 0 ? "none" : given.join(", ")})`,
      );
    }
    const namePrefix = request.prefix ?? "";
    const after = request.continuationToken === undefined ? undefined : decodeToken(request.continuationToken);
    const folders = request.listAll
      ? this.readableFolders(principal)
      : [this.folderOf(principal, request, "Files.READ")];
    const query: ListQuery = { folders, namePrefix, after, limit: request.maxKeys + 1 };
    const found = await this.store.list(query);
    const page = found.slice(0, request.maxKeys);
    const isTruncated = found.length > request.maxKeys;
    return {
      ...(request.continuationToken !== undefined && { continuationToken: request.continuationToken }),
      ...(isTruncated && { nextContinuationToken: encodeToken(page[page.length - 1]!.key) }),
      encodingType: "url",
      isTruncated,
      keyCount: page.length,
      maxKeys: request.maxKeys,
      ...(request.prefix !== undefined && { prefix: request.prefix }),
      files: page.map((v) => this.entry(v, request.listAll !== undefined)),
    };
  }

  downloadUrl(principal: Principal, selector: FolderSelector, fileName: string): { fileName: string; url: string } {
    const key = this.keyFor(principal, selector, fileName, "Files.READ");
    return { fileName: key, url: this.signer.signFor({ method: "GET", path: transferPath(key) }) };
  }

  uploadUrl(
    principal: Principal,
    selector: FolderSelector,
    fileName: string,
    headers: UploadHeaders,
  ): { fileName: string; url: string } {
    requireReadWrite(principal);
    const key = this.keyFor(principal, selector, fileName, "Files.CREATE");
    const bound: Record<string, string> = {};
    for (const [field, header] of Object.entries(HEADER_OF) as [keyof UploadHeaders, string][]) {
      const value = headers[field];
      if (value === undefined) continue;
      checkHeaderValue(field, value);
      bound[header] = value;
    }
    if (headers.contentMD5 !== undefined && !isBase64Md5(headers.contentMD5)) {
      throw invalid("contentMD5", "expected the base64 encoding of a 16-byte MD5 digest");
    }
    return { fileName: key, url: this.signer.signFor({ method: "PUT", path: transferPath(key), headers: bound }) };
  }

  async remove(
    principal: Principal,
    selector: FolderSelector,
    fileName: string,
    allVersions: boolean,
  ): Promise<string> {
    requireReadWrite(principal);
    const key = this.keyFor(principal, selector, fileName, "Files.DELETE");
    // Like S3, removing a file that is not there succeeds: the caller's intent holds.
    await this.store.remove(key, allVersions);
    return key;
  }

  private keyFor(principal: Principal, selector: FolderSelector, fileName: string, privilege: Privilege): string {
    const given = SELECTORS.filter((s) => selector[s] !== undefined);
    if (given.length !== 1) {
      throw new ApiError(
        "INVALID_ARGUMENTS",
        `Exactly one of public, root, thingName, thingType is required (got ${given.length === 0 ? "none" : given.join(", ")})`,
      );
    }
    checkFileName(fileName);
    const { folder, owners } = this.folderOf(principal, selector, privilege);
    return keyOf({ folder, owner: owners === "*" ? "" : owners[0]!, name: fileName });
  }

  /** The one folder a selector names, after checking the caller's privilege on the domain that owns it. */
  private folderOf(
    principal: Principal,
    selector: FolderSelector,
    privilege: Privilege,
  ): { folder: Folder; owners: readonly string[] | "*" } {
    if (selector.public) {
      // Public files belong to no domain: the privilege on the caller's home domain opens them.
      authorize(principal, privilege, principal.homeDomain);
      return { folder: "public", owners: "*" };
    }
    if (selector.root) {
      if (!principal.can(privilege, ROOT_DOMAIN)) {
        throw new ApiError(
          "NOT_AUTHORIZED_DOMAIN",
          `User ${principal.userName} lacks ${privilege} on the root domain`,
          "domain",
        );
      }
      return { folder: "root", owners: "*" };
    }
    if (selector.thingName !== undefined) {
      const thing = this.registry.thing(selector.thingName);
      if (!thing) throw notFound("THING_NOT_FOUND", `Thing ${selector.thingName}`, "thingName");
      authorize(principal, privilege, thing.domain);
      return { folder: "things", owners: [thing.thingName] };
    }
    const type = this.registry.thingType(selector.thingType!);
    if (!type) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${selector.thingType}`, "thingType");
    authorize(principal, privilege, type.domain);
    return { folder: "thing-types", owners: [type.id] };
  }

  /** listAll: the non-public folders the caller may read. */
  private readableFolders(principal: Principal): ListQuery["folders"] {
    if (principal.can("Files.READ", ROOT_DOMAIN)) {
      return [
        { folder: "root", owners: "*" },
        { folder: "things", owners: "*" },
        { folder: "thing-types", owners: "*" },
      ];
    }
    const things = this.registry
      .things()
      .filter((t) => principal.can("Files.READ", t.domain))
      .map((t) => t.thingName);
    const types = this.registry
      .thingTypes()
      .filter((t) => principal.can("Files.READ", t.domain))
      .map((t) => t.id);
    if (!this.identity.domains().some((d) => principal.can("Files.READ", d.id))) {
      throw new ApiError("NOT_AUTHORIZED", `User ${principal.userName} lacks Files.READ`);
    }
    return [
      { folder: "things", owners: things },
      { folder: "thing-types", owners: types },
    ];
  }

  private entry(v: FileVersion, withFolder: boolean): FileEntry {
    const entry: FileEntry = {
      Key: v.key,
      LastModified: new Date(v.lastModified).toISOString(),
      ETag: `"${v.md5}"`,
      Size: v.size,
      url: this.signer.signFor({ method: "GET", path: transferPath(v.key) }),
    };
    if (withFolder) {
      entry.folder = v.folder;
      if (v.folder === "things") entry.thingName = v.owner;
      if (v.folder === "thing-types") entry.thingType = v.owner;
    }
    return entry;
  }
}

// The token is opaque to callers; it is standard base64 (S3 style, so it holds '+', '/' and '=').
function encodeToken(lastKey: string): string {
  return Buffer.from(JSON.stringify({ v: 1, after: lastKey })).toString("base64");
}

function decodeToken(token: string): string {
  // A client that forgot to URL-encode sends '+' that arrives as ' '.
  const text = Buffer.from(token.replace(/ /g, "+"), "base64").toString("utf8");
  try {
    const parsed = JSON.parse(text) as { v?: unknown; after?: unknown };
    if (parsed.v === 1 && typeof parsed.after === "string") return parsed.after;
  } catch {
    // fall through to the error
  }
  throw invalid("continuationToken", "not a token this service issued");
}

function isBase64Md5(value: string): boolean {
  return /^[A-Za-z0-9+/]{22}==$/.test(value) && Buffer.from(value, "base64").length === 16;
}

/** A header value must survive HTTP unchanged: visible ASCII and inner spaces only. */
function checkHeaderValue(field: string, value: string): void {
  if (!/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)) {
    throw invalid(field, "expected printable ASCII without leading or trailing spaces");
  }
}
