import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Principal } from "../auth/index.js";
import type { Logger } from "../observability/index.js";

export interface ApiEnv {
  Variables: {
    requestId: string;
    log: Logger;
    principal: Principal;
  };
}

export type Api = OpenAPIHono<ApiEnv>;

/**
 * Every REST area is one module of this shape, registered in `routes/index.ts`. `D` is what the
 * area uses, named by the module itself: a reader sees its dependencies in its signature, and
 * the wiring (src/service.ts) must have built each one.
 */
export type RouteModule<D> = (app: Api, deps: D) => void;
