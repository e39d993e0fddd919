import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Context } from "hono";
import { Counter } from "prom-client";
import { ApiError } from "../../errors/index.js";
import {
  MAX_UPLOAD_BYTES,
  PutError,
  TRANSFER_PREFIX,
  keyOfTransferPath,
  type FileVersion,
  type Files,
} from "../../files/index.js";
import type { UrlSigner } from "../../signing/index.js";
import type { Metrics } from "../../observability/index.js";
import type { ApiEnv, RouteModule } from "../context.js";

/**
 * The transfer side of Files (version 2): plain GET and PUT on signed URLs
 * under `/storage/files/`, without credentials. Uploads stream to disk (the
 * body limit of the REST interface does not apply here).
 */
export const storageFileRoutes: RouteModule<{ files: Files; signer: UrlSigner; metrics: Metrics }> = (
  app,
  { files, signer, metrics },
) => {
  const bytes = new Counter({
    name: "dms_file_transfer_bytes_total",
    help: "Bytes moved through signed file URLs, by direction",
    labelNames: ["direction"],
    registers: [metrics.registry],
  });

  const keyOf = (c: Context<ApiEnv>): string => {
    const rawPath = new URL(c.req.url).pathname;
    const key = keyOfTransferPath(rawPath);
    if (key === undefined) throw new ApiError("INVALID_ARGUMENTS", `Not a valid file path: ${rawPath}`, "fileName");
    return key;
  };

  app.get(`${TRANSFER_PREFIX}*`, async (c) => {
    signer.assertSigned(c.req.raw);
    const key = keyOf(c);
    const version = await files.store.head(key);
    if (!version) throw new ApiError("FILE_NOT_FOUND", `File ${key} not found`);
    const headers = baseHeaders(version);
    if (notModified(c, version)) return c.body(null, 304, headers);

    const range = byteRange(c, version);
    if (range === "unsatisfiable") {
      return c.body(null, 416, { ...headers, "content-range": `bytes */${version.size}` });
    }
    const opened = await files.store.read(key, range);
    if (!opened) throw new ApiError("FILE_NOT_FOUND", `File ${key} not found`);
    const v = opened.version;
    const body = Readable.toWeb(opened.stream) as ReadableStream<Uint8Array>;
    bytes.inc({ direction: "download" }, range ? range.end - range.start + 1 : v.size);
    if (range) {
      return c.body(body, 206, {
        ...baseHeaders(v),
        "content-length": String(range.end - range.start + 1),
        "content-range": `bytes ${range.start}-${range.end}/${v.size}`,
      });
    }
    return c.body(body, 200, { ...baseHeaders(v), "content-length": String(v.size) });
  });

  app.put(`${TRANSFER_PREFIX}*`, async (c) => {
    signer.assertSigned(c.req.raw);
    const key = keyOf(c);
    const length = c.req.header("content-length");
    if (length !== undefined && Number(length) > MAX_UPLOAD_BYTES) {
      throw new ApiError("PAYLOAD_TOO_LARGE", `A file may hold at most ${MAX_UPLOAD_BYTES} bytes`);
    }
    const body = requestBody(c);
    try {
      const version = await files.store.put(key, body, {
        contentType: c.req.header("content-type"),
        contentEncoding: c.req.header("content-encoding"),
        contentDisposition: c.req.header("content-disposition"),
        contentMD5: c.req.header("content-md5")?.trim(),
        maxBytes: MAX_UPLOAD_BYTES,
      });
      bytes.inc({ direction: "upload" }, version.size);
      return c.body(null, 200, { etag: `"${version.md5}"`, "x-dms-version-id": version.versionId });
    } catch (err) {
      if (err instanceof PutError && err.reason === "BAD_DIGEST") throw new ApiError("INVALID_ARGUMENTS", err.message);
      if (err instanceof PutError) throw new ApiError("PAYLOAD_TOO_LARGE", err.message);
      // The client went away mid-body: its fault, not the service's; the store kept nothing.
      if (body.readableAborted || body.errored) {
        throw new ApiError("INVALID_ARGUMENTS", "The upload ended before the whole body arrived");
      }
      throw err;
    }
  });
};

/** The Node request itself when served by @hono/node-server (no web-stream hop), else the fetch body. */
function requestBody(c: Context<ApiEnv>): Readable {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming) return incoming;
  const body = c.req.raw.body;
  return body ? Readable.fromWeb(body as WebReadableStream) : Readable.from([]);
}

function baseHeaders(v: FileVersion): Record<string, string> {
  const headers: Record<string, string> = {
    etag: `"${v.md5}"`,
    "last-modified": new Date(v.lastModified).toUTCString(),
    "accept-ranges": "bytes",
    "content-type": v.contentType ?? "application/octet-stream",
    "cache-control": "private, max-age=0",
  };
  if (v.contentEncoding) headers["content-encoding"] = v.contentEncoding;
  if (v.contentDisposition) headers["content-disposition"] = v.contentDisposition;
  return headers;
}

/** If-None-Match wins over If-Modified-Since, as RFC 9110 says. */
function notModified(c: Context<ApiEnv>, v: FileVersion): boolean {
  const inm = c.req.header("if-none-match");
  if (inm !== undefined) {
    return inm.split(",").some((tag) => {
      const t = tag.trim().replace(/^W\//, "");
      return t === "*" || t === `"${v.md5}"`;
    });
  }
  const ims = c.req.header("if-modified-since");
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  return !Number.isNaN(since) && secondsFloor(v) <= since;
}

/** HTTP dates have whole seconds. */
function secondsFloor(v: FileVersion): number {
  return Math.floor(v.lastModified / 1000) * 1000;
}

/** One `bytes=` range (suffix and open-ended too); several ranges or bad syntax are ignored, as RFC 9110 allows. */
function byteRange(c: Context<ApiEnv>, v: FileVersion): { start: number; end: number } | "unsatisfiable" | undefined {
  const header = c.req.header("range");
  if (header === undefined) return undefined;
  const ifRange = c.req.header("if-range");
  if (ifRange !== undefined) {
    // If-Range holds an ETag or a date; when the file changed since, the whole file is sent.
    const t = ifRange.trim();
    const same = t.startsWith('"') || t.startsWith("W/") ? t === `"${v.md5}"` : Date.parse(t) >= secondsFloor(v);
    if (!same) return undefined;
  }
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  const size = v.size;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end };
}
