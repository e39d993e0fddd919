import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { Hono } from "hono";

/** Where `npm run build:console` writes the console; the same path from src/ (tsx) and from a compiled dist/. */
const DIST = fileURLToPath(new URL("../../console/dist/", import.meta.url));

/** A Map, not an object literal: a name such as `__proto__` must not find an inherited entry. */
const ASSETS = new Map<string, string>([
  ["index.html", "text/html; charset=utf-8"],
  ["app.js", "application/javascript; charset=utf-8"],
  ["app.css", "text/css; charset=utf-8"],
]);

/**
 * `/console`: the operator's web console, static files built from console/src. It holds no
 * credentials of its own: the page signs in through the public REST interface like any client.
 */
export function consoleRoutes(dist = DIST): Hono {
  const serve = async (file: string): Promise<Response> => {
    const type = ASSETS.get(file);
    if (!type) return Response.json({ message: "Not found", messageKey: "NOT_FOUND" }, { status: 404 });
    const path = `${dist}${file}`;
    if (!existsSync(path))
      return Response.json(
        { message: "The console is not built: run npm run build:console", messageKey: "NOT_FOUND" },
        { status: 404 },
      );
    // The page is small and changes with each build: revalidated, never served stale after an upgrade.
    return new Response(await readFile(path), { headers: { "content-type": type, "cache-control": "no-cache" } });
  };
  const routes = new Hono();
  routes.get("/console", () => serve("index.html"));
  routes.get("/console/", () => serve("index.html"));
  routes.get("/console/:file", (c) => serve(c.req.param("file")));
  return routes;
}
