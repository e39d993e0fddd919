import type { Duplex } from "node:stream";

/** The error keys of the interface, with the HTTP status DESIGN.md gives each. */
export const ERROR_STATUS = {
  PROPERTY_REQUIRED: 400,
  INVALID_ARGUMENTS: 400,
  INVALID_RULE: 400,
  INVALID_RULE_CONFIG: 400,
  INVALID_ACTION: 400,
  UNAUTHORIZED: 401,
  /** A wrong user name or password at login, under the key the original service's clients test for. */
  INVALID_LOGIN: 401,
  FORBIDDEN: 403,
  NOT_AUTHORIZED: 403,
  NOT_AUTHORIZED_DOMAIN: 403,
  FILE_NOT_FOUND: 404,
  THING_NOT_FOUND: 404,
  THING_GROUP_NOT_FOUND: 404,
  THING_JOB_NOT_FOUND: 404,
  THING_TYPE_NOT_FOUND: 404,
  EXPORT_JOB_NOT_FOUND: 404,
  EXPORT_EXECUTION_NOT_FOUND: 404,
  RULE_NOT_FOUND: 404,
  DOMAIN_NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  NOT_FOUND: 404,
  RULE_ID_EXISTS: 409,
  ALREADY_EXISTS: 409,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  /** Any operation but the probes and the API description, until the service is ready (`/readyz`). */
  SERVICE_STARTING: 503,
  /** The database cannot serve (unreachable, a statement cancelled, lasting contention): try again later. */
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorKey = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorKey];

/** The flat error body the original service's clients read. */
export interface ErrorBody {
  message: string;
  messageKey: ErrorKey;
  property?: string;
}

/**
 * An error that answers the caller with its key. Every error of dms is made
 * through this class so that the body and status are decided in one place.
 */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly key: ErrorKey,
    message: string,
    readonly property?: string,
    status?: number,
  ) {
    super(message);
    this.status = status ?? ERROR_STATUS[key];
  }

  body(): ErrorBody {
    return this.property === undefined
      ? { message: this.message, messageKey: this.key }
      : { message: this.message, messageKey: this.key, property: this.property };
  }
}

/** The key that stands for a whole HTTP status, for a 4xx the framework answers itself. */
const GENERIC_KEY: Partial<Record<number, ErrorKey>> = {
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  431: "HEADERS_TOO_LARGE",
};

/**
 * A 4xx of the framework (Hono, its validators) as an interface error: its
 * status's own key where the interface has one, else INVALID_ARGUMENTS at 400
 * (a 415 for a body sent as text/plain, a 405, ...), so that a key always
 * comes with the status the interface gives it.
 */
export function frameworkError(status: number, message: string): ApiError {
  const key = GENERIC_KEY[status] ?? "INVALID_ARGUMENTS";
  return new ApiError(key, message || "Invalid request");
}

/** Seconds a client is asked to wait (`Retry-After`) before it tries an operation the database could not serve again. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export const required = (property: string): ApiError =>
  new ApiError("PROPERTY_REQUIRED", `Property ${property} is required`, property);

export const invalid = (property: string, why: string): ApiError =>
  new ApiError("INVALID_ARGUMENTS", `Property ${property} is invalid: ${why}`, property);

export const notAuthorized = (what = "You are not authorized for this operation"): ApiError =>
  new ApiError("NOT_AUTHORIZED", what);

export const notFound = (key: ErrorKey, what: string, property?: string): ApiError =>
  new ApiError(key, `${what} not found`, property);

/** What `answerMalformedRequests` needs of a Node HTTP server. */
interface ClientErrorSource {
  on(event: "clientError", listener: (err: Error & { code?: string }, socket: Duplex) => void): unknown;
}

/**
 * Requests Node's HTTP parser refuses before any handler runs (a request line
 * and headers over its 16 KiB limit, bytes that are not HTTP) get the flat
 * error body too, instead of Node's bare status line.
 */
export function answerMalformedRequests(server: ClientErrorSource): void {
  server.on("clientError", (err, socket) => {
    // A timed-out request keeps Node's own 408 (its writer knows the timing); a reset socket has no one to answer.
    if (err.code === "ERR_HTTP_REQUEST_TIMEOUT" || err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
    const error = tooLarge
      ? new ApiError("HEADERS_TOO_LARGE", "Request line and headers are over the server's limit")
      : new ApiError("INVALID_ARGUMENTS", `Malformed HTTP request (${err.code ?? err.message})`);
    const body = JSON.stringify(error.body());
    const reason = tooLarge ? "Request Header Fields Too Large" : "Bad Request";
    socket.end(
      `HTTP/1.1 ${error.status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
