import type { MiddlewareHandler } from "hono";
import { ApiError } from "../errors/index.js";
import type { Readiness } from "../readiness/index.js";

/**
 * What answers while the service starts: the probes, the metrics, the API description and the
 * console's static page (it shows the operations' 503 until they answer).
 */
const ANSWERED_WHILE_STARTING = [
  /^\/healthz$/,
  /^\/readyz$/,
  /^\/metrics$/,
  /^\/openapi\.json$/,
  /^\/docs(\/.*)?$/,
  /^\/console(\/.*)?$/,
];

/** Seconds a client is asked to wait before it tries again. */
export const STARTING_RETRY_AFTER_SECONDS = 2;

/**
 * Until the service has started (`readiness.started()`), every other request
 * answers 503 SERVICE_STARTING with `Retry-After`, before authentication: an
 * answer given meanwhile would depend on half-applied provisioning (a thing,
 * a user or an API key not there yet) or on components not yet started.
 */
export function startingGate(readiness: Pick<Readiness, "started">): MiddlewareHandler {
  return async (c, next) => {
    if (readiness.started() || ANSWERED_WHILE_STARTING.some((p) => p.test(c.req.path))) return next();
    const error = new ApiError("SERVICE_STARTING", "The service is starting (see /readyz); try again shortly");
    c.header("Retry-After", String(STARTING_RETRY_AFTER_SECONDS));
    return c.json(error.body(), 503);
  };
}
