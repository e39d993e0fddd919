import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Api } from "./context.js";

/** A Map, not an object literal: a name such as `__proto__` or `constructor` must not find an inherited entry. */
const ASSETS = new Map<string, string>([
  ["swagger-ui.css", "text/css; charset=utf-8"],
  ["swagger-ui-bundle.js", "application/javascript; charset=utf-8"],
  ["swagger-ui-standalone-preset.js", "application/javascript; charset=utf-8"],
]);

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>dms API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#ui", persistAuthorization: true });</script>
</body></html>`;

/** `/docs`: Swagger UI served from the swagger-ui-dist package, so it works with no internet. */
export function registerDocs(app: Api): void {
  const dist = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  app.get("/docs", (c) => c.html(PAGE));
  app.get("/docs/assets/:file", async (c) => {
    const file = c.req.param("file");
    const type = ASSETS.get(file);
    if (!type) return c.json({ message: "Not found", messageKey: "NOT_FOUND" }, 404);
    return c.body(await readFile(join(dist, file)), 200, { "content-type": type, "cache-control": "max-age=3600" });
  });
}
