import { ApiError } from "../errors/index.js";

/**
 * What went wrong with the database rather than with the request: the faults a client should
 * answer with "try again later" and a service should ride out.
 *
 * - `unreachable`: no connection (refused, reset, ended by the server, a connect or pool wait that
 *   timed out, the server shutting down or not yet accepting);
 * - `timeout`: a statement cancelled (`statement_timeout`, or an operator's cancel);
 * - `contention`: a serialization failure or deadlock that stayed after the transaction's retries.
 */
export type DatabaseFaultKind = "unreachable" | "timeout" | "contention";

/** The network errors of a connection that is not there (Node's `code`s). */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs of a server that cannot serve (docs: PostgreSQL, Appendix A): class 08 (connection
 * exception) is matched by its prefix.
 */
const UNAVAILABLE_STATES = new Set([
  "57P01", // admin_shutdown: terminated by the administrator or a shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up, in recovery
  "53300", // too_many_connections
  "53000", // insufficient_resources
]);

/** query_canceled: `statement_timeout`, `pg_cancel_backend`. */
const CANCELED_STATE = "57014";

/** serialization_failure and deadlock_detected: the transaction may succeed when run again. */
export const RETRYABLE_STATES: ReadonlySet<string> = new Set(["40001", "40P01"]);

/** Messages node-postgres gives its own connection faults (they carry no code). */
const CLIENT_MESSAGES = [
  /^Connection terminated/, // unexpectedly, due to connection timeout, or by the pool's end
  /^timeout exceeded when trying to connect$/, // the pool's connectionTimeoutMillis
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
];

/** Whether `message` names a network code: an error that crossed a thread keeps only its message. */
const namesNetworkCode = (message: string): boolean => message.split(/[^A-Z_]+/).some((w) => NETWORK_CODES.has(w));

/** The database fault `err` is, or undefined when it is something else (a bad statement, a constraint, ...). */
export function databaseFault(err: unknown): DatabaseFaultKind | undefined {
  // An interface error was decided already; a message of its own may name a network code.
  if (!(err instanceof Error) || err instanceof ApiError) return undefined;
  // A connect to a name with several addresses fails with every attempt's error.
  if (err instanceof AggregateError) {
    const kinds = err.errors.map(databaseFault);
    if (kinds.length > 0 && kinds.every((k) => k === "unreachable")) return "unreachable";
  }
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    if (NETWORK_CODES.has(code) || code.startsWith("08") || UNAVAILABLE_STATES.has(code)) return "unreachable";
    if (code === CANCELED_STATE) return "timeout";
    if (RETRYABLE_STATES.has(code)) return "contention";
  }
  if (CLIENT_MESSAGES.some((m) => m.test(err.message)) || namesNetworkCode(err.message)) return "unreachable";
  return undefined;
}

const FAULT_MESSAGES: Record<DatabaseFaultKind, string> = {
  unreachable: "The database is unreachable; try again shortly (see /readyz)",
  timeout: "The database did not answer in time; try again shortly",
  contention: "The database was busy with conflicting changes; try again shortly",
};

/** `err` as the interface's 503 SERVICE_UNAVAILABLE when it is a database fault, else undefined. */
export function unavailableError(err: unknown): ApiError | undefined {
  const kind = databaseFault(err);
  return kind && new ApiError("SERVICE_UNAVAILABLE", FAULT_MESSAGES[kind]);
}
