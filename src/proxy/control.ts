import { Hono, type Context, type MiddlewareHandler } from "hono";
import { authorize, requireReadWrite, type Principal } from "../auth/index.js";
import type { Logger } from "../observability/index.js";
import { ApiError, invalid, notFound, required } from "../errors/index.js";
import { PortsExhausted, type SessionManager } from "./sessions.js";
import { parseWhitelist, type Whitelist } from "./whitelist.js";

/** DESIGN.md's defaults for what `/on` leaves out. */
export const DEFAULT_TIMEOUT_SECONDS = 60;
const MAX_TIMEOUT_SECONDS = 24 * 60 * 60;

/** What the control app's handlers read from a request: the principal the authentication set. */
export interface ControlEnv {
  Variables: { principal: Principal };
}

type Ctx = Context<ControlEnv>;

/** What the control interface depends on: the REST credentials check, the things' serials, a logger. */
export interface ControlDeps {
  /** The authentication of REST (src/auth), the one instance the wiring built for both. */
  authentication: MiddlewareHandler<ControlEnv>;
  things: SerialLookup;
  logger: Logger;
}

/** The one registry read the control interface needs. */
export interface SerialLookup {
  thingBySerial(serial: string): { domain: string } | undefined;
}

/**
 * The proxy control interface: GET `/on`, `/off`, `/status`. Credentials are
 * those of REST (same middleware); each operation needs `Things.UPDATE` on the
 * domain of the thing whose serial it names.
 */
export function createControlApp(deps: ControlDeps, sessions: SessionManager, host: string): Hono<ControlEnv> {
  const app = new Hono<ControlEnv>();
  app.use(deps.authentication);

  app.get("/on", async (c) => {
    const serial = authorizedSerial(c, deps.things);
    const request = {
      serial,
      persistent: persistentOf(c.req.query("persistent")),
      timeoutMs: timeoutOf(c.req.query("timeout")) * 1000,
      whitelist: whitelistOf(c.req.query("ip_whitelist")),
    };
    const session = await sessions.start(request);
    return c.json({ host, port: session.port });
  });

  app.get("/off", (c) => {
    const serial = authorizedSerial(c, deps.things);
    const stopped = sessions.stop(serial);
    if (!stopped) throw noSession(serial);
    return c.json({ transferred: stopped.transferred });
  });

  app.get("/status", (c) => {
    const serial = authorizedSerial(c, deps.things);
    const status = sessions.status(serial);
    if (!status) throw noSession(serial);
    return c.json(status);
  });

  app.notFound((c) => c.json({ message: `No operation ${c.req.method} ${c.req.path}`, messageKey: "NOT_FOUND" }, 404));
  app.onError((err, c) => {
    if (err instanceof ApiError) return c.json(err.body(), err.status as 400);
    if (err instanceof PortsExhausted) return c.json({ message: err.message }, 503);
    deps.logger.error({ err, path: c.req.path }, "proxy control internal error");
    return c.json({ message: "Internal error of the proxy" }, 500);
  });
  return app;
}

/** The `serial` of the query, once the caller may update the thing that carries it. */
function authorizedSerial(c: Ctx, things: SerialLookup): string {
  const serial = c.req.query("serial");
  if (serial === undefined || serial === "") throw required("serial");
  const thing = things.thingBySerial(serial);
  if (!thing) throw notFound("THING_NOT_FOUND", `Thing with serial ${serial}`, "serial");
  const principal = c.get("principal");
  requireReadWrite(principal);
  authorize(principal, "Things.UPDATE", thing.domain);
  return serial;
}

function noSession(serial: string): ApiError {
  return new ApiError("NOT_FOUND", `No proxy session for serial ${serial}`, "serial");
}

function persistentOf(value: string | undefined): boolean {
  if (value === undefined || value === "") return false;
  if (value === "true" || value === "false") return value === "true";
  throw invalid("persistent", "expected true or false");
}

function timeoutOf(value: string | undefined): number {
  if (value === undefined || value === "") return DEFAULT_TIMEOUT_SECONDS;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TIMEOUT_SECONDS) {
    throw invalid("timeout", `expected seconds, more than 0 and at most ${MAX_TIMEOUT_SECONDS}`);
  }
  return seconds;
}

function whitelistOf(value: string | undefined): Whitelist {
  if (value === undefined || value.trim() === "") return undefined;
  const parsed = parseWhitelist(value);
  if ("bad" in parsed) throw invalid("ip_whitelist", `${parsed.bad} is not an IPv4 or IPv6 address`);
  return parsed.list;
}
