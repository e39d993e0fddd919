import { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { requestId } from "hono/request-id";
import { ApiError, frameworkError, UNAVAILABLE_RETRY_AFTER_SECONDS } from "../errors/index.js";
import { unavailableError } from "../store/index.js";
import type { AuthEnv } from "../auth/index.js";
import type { Config } from "../config/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import type { Readiness } from "../readiness/index.js";
import type { Api, ApiEnv, RouteModule } from "./context.js";
import { registerDocs } from "./docs.js";
import { consoleRoutes } from "../console/index.js";
import { checkStages, stageNames, stagePath } from "./stages.js";
import { jsonShapeGuard } from "./json-shape.js";
import { startingGate } from "./starting.js";
import { validationHook } from "./validation.js";

/** What the REST application itself uses, beside what its route modules declare. */
export interface AppDeps {
  config: Pick<Config, "DMS_STACK_NAME" | "DMS_MAX_BODY_BYTES">;
  logger: Logger;
  metrics: Metrics;
  /** `/healthz` asks the database the stores are on. */
  stores: { ping(): Promise<void> };
  readiness: Readiness;
  /** The one authentication of this process (src/auth), shared with the proxy control interface. */
  authentication: MiddlewareHandler<AuthEnv>;
}

/** Builds the REST application: middleware, every route module, `/openapi.json` and `/docs`. */
export function createApp<D>(services: AppDeps & D, modules: readonly RouteModule<D>[]): Api {
  const stages = stageNames(services.config.DMS_STACK_NAME);
  const app: Api = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook, getPath: stagePath(stages) });
  const { logger, metrics } = services;

  app.use(requestId());
  app.use(async (c, next) => {
    const started = performance.now();
    c.set("log", logger.child({ reqId: c.get("requestId") }));
    await next();
    const route = c.req.routePath || "unmatched";
    const seconds = (performance.now() - started) / 1000;
    metrics.httpRequests.inc({ method: c.req.method, route, status: String(c.res.status) });
    metrics.httpDuration.observe({ method: c.req.method, route }, seconds);
    c.get("log").info(
      { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(seconds * 1000) },
      "request",
    );
  });
  // Browser clients (MIC's web workshops, mic-sdk-js in a page) send x-api-key, Authorization and
  // identityId, which need a preflight. Credentials travel in headers, never cookies, so any origin
  // may call: a page can use only the credentials its user gave it.
  app.use(
    cors({
      origin: "*",
      allowHeaders: [
        "Authorization",
        "x-api-key",
        "identityId",
        "Content-Type",
        "Content-MD5",
        "Content-Disposition",
        "Content-Encoding",
      ],
      maxAge: 600,
    }),
  );
  app.use(startingGate(services.readiness));
  const limitBody = bodyLimit({
    maxSize: services.config.DMS_MAX_BODY_BYTES,
    onError: () => {
      throw new ApiError("PAYLOAD_TOO_LARGE", `Request body over ${services.config.DMS_MAX_BODY_BYTES} bytes`);
    },
  });
  app.use(async (c, next) =>
    // Signed-URL uploads stream their body to the file store and apply their own limits.
    c.req.path.startsWith("/storage/") ? next() : limitBody(c, next),
  );
  app.use(services.authentication);
  // After authentication, so that only callers with a key and a token make the service read a body.
  app.use(jsonShapeGuard());

  app.get("/healthz", async (c) => {
    await services.stores.ping();
    return c.json({ status: "ok" });
  });
  // 503 with what is still awaited, 200 once every registered condition is met.
  app.get("/readyz", (c) => {
    const { ready, conditions } = services.readiness.status();
    return ready
      ? c.json({ status: "ready", conditions }, 200)
      : c.json({ status: "waiting", waitingFor: conditions.filter((x) => !x.ready), conditions }, 503);
  });
  app.get("/metrics", async (c) =>
    c.body(await metrics.registry.metrics(), 200, { "content-type": metrics.registry.contentType }),
  );

  for (const register of modules) register(app, services);
  checkStages(
    stages,
    app.routes.map((r) => r.path),
  );

  app.openAPIRegistry.registerComponent("securitySchemes", "token", {
    type: "apiKey",
    in: "header",
    name: "Authorization",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
  });
  app.doc("/openapi.json", {
    openapi: "3.0.3",
    info: {
      title: "dms: device management service",
      version: "1.0.0",
      description: `Every operation is also answered under /${stages.join("/ and /")}/ (the stages MIC clients put before each path).`,
    },
    security: [{ token: [], apiKey: [] }],
  });
  registerDocs(app);
  app.route("/", consoleRoutes());

  app.notFound((c) => c.json({ message: `No operation ${c.req.method} ${c.req.path}`, messageKey: "NOT_FOUND" }, 404));
  app.onError((err, c) => {
    // A database fault answers alike whichever operation met it: 503 and when to try again.
    const unavailable = unavailableError(err);
    if (unavailable) c.get("log")?.warn({ err }, "database unavailable");
    const answer = unavailable ?? err;
    if (answer instanceof ApiError) {
      if (answer.key === "SERVICE_UNAVAILABLE") c.header("Retry-After", String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return c.json(answer.body(), answer.status as 400);
    }
    if (err instanceof HTTPException && err.status < 500) {
      // Hono's own 4xx, such as a body that is not JSON or not of the declared media type.
      const error = frameworkError(err.status, err.message);
      return c.json(error.body(), error.status as 400);
    }
    c.get("log")?.error({ err }, "internal error");
    return c.json({ message: `Internal error (request ${c.get("requestId")})`, messageKey: "INTERNAL_ERROR" }, 500);
  });
  return app;
}
