import { randomUUID } from "node:crypto";
import { ApiError, notFound } from "../errors/index.js";
import { SIGNED_URL_SECONDS, type UrlSigner } from "../signing/index.js";
import type { StoredJobDocument, JobStore } from "./store.js";

/** A job document may be at most this large (the interface leaves the size open). */
export const MAX_DOCUMENT_BYTES = 32 * 1024;
export const DOCUMENT_PATH_PREFIX = "/storage/job-documents/";

export interface UploadTicket {
  documentName: string;
  documentId: string;
  signedUrl: string;
}

export interface UploadRequest {
  documentId: string;
  /** The PUT as received: its URL carries the signature. */
  request: Request;
  contentType: string | undefined;
  contentLength: string | undefined;
  body: () => Promise<ArrayBuffer>;
}

/** Job documents: the upload ticket, the one signed PUT, and reading a document back. */
export class JobDocuments {
  constructor(
    private readonly store: JobStore,
    private readonly signer: UrlSigner,
    private readonly clock: () => number,
  ) {}

  async createTicket(documentName: string, domain: string): Promise<UploadTicket> {
    const documentId = randomUUID();
    const path = `${DOCUMENT_PATH_PREFIX}${documentId}`;
    const expiresAt = this.clock() + SIGNED_URL_SECONDS * 1000;
    const url = this.signer.sign({ method: "PUT", path, expiresAt });
    await this.store.insertDocument({
      documentId,
      documentName,
      domain,
      createdAt: this.clock(),
      uploadExpiresAt: expiresAt,
    });
    return { documentName, documentId, signedUrl: url };
  }

  document(documentId: string): Promise<StoredJobDocument | undefined> {
    return this.store.document(documentId);
  }

  /**
   * Accepts the PUT of a signed URL once. Forbidden (403) for a bad, expired
   * or used URL, so a leaked URL cannot replace a document a job already uses.
   */
  async upload(req: UploadRequest): Promise<void> {
    const verdict = this.signer.verifyRequest(req.request);
    if (!verdict.ok) throw new ApiError("FORBIDDEN", `Signed URL refused: ${verdict.reason}`);
    const row = await this.document(req.documentId);
    if (!row) throw notFound("FILE_NOT_FOUND", `Job document ${req.documentId}`);
    if (row.content !== null) throw new ApiError("FORBIDDEN", "Signed URL refused: already used");
    if (!req.contentType) throw new ApiError("PROPERTY_REQUIRED", "Header Content-Type is required", "Content-Type");
    if (req.contentLength === undefined || !/^\d+$/.test(req.contentLength)) {
      throw new ApiError("PROPERTY_REQUIRED", "Header Content-Length is required", "Content-Length", 411);
    }
    if (Number(req.contentLength) > MAX_DOCUMENT_BYTES) throw tooLarge();
    const bytes = Buffer.from(await req.body());
    if (bytes.length > MAX_DOCUMENT_BYTES) throw tooLarge();
    const text = bytes.toString("utf8");
    try {
      JSON.parse(text);
    } catch {
      throw new ApiError("INVALID_ARGUMENTS", "The job document must be JSON", "document");
    }
    const done = await this.store.uploadDocument(req.documentId, text, this.clock());
    if (!done) throw new ApiError("FORBIDDEN", "Signed URL refused: already used");
  }
}

function tooLarge(): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `A job document is at most ${MAX_DOCUMENT_BYTES} bytes`);
}
