import { createRoute, z } from "@hono/zod-openapi";
import type { ApiKeysService } from "../../auth/index.js";
import { randomSecret } from "../../config/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonResponses } from "../openapi.js";

const ApiKeySchema = z.object({ id: z.string(), label: z.string(), createdAt: z.string() }).openapi("ApiKey");
const NewApiKeySchema = ApiKeySchema.extend({
  key: z.string().openapi({ description: "The key itself: shown only in this answer, stored hashed" }),
}).openapi("NewApiKey");

const tags = ["admin: API keys"];

const list = createRoute({
  method: "get",
  path: "/admin/api-keys",
  tags,
  summary: "API keys (without the keys themselves); needs ApiKeys.READ on root",
  responses: jsonResponses(z.object({ apiKeys: z.array(ApiKeySchema) })),
});
const create = createRoute({
  method: "post",
  path: "/admin/api-keys",
  tags,
  summary: "Generate an API key; the answer is the only place the key is ever shown. Needs ApiKeys.CREATE on root",
  request: {
    body: {
      required: false,
      content: { "application/json": { schema: z.object({ label: z.string().max(256).optional() }) } },
    },
  },
  responses: jsonResponses(NewApiKeySchema, "Created"),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/api-keys/{id}",
  tags,
  summary: "Revoke an API key; needs ApiKeys.DELETE on root",
  request: { params: z.object({ id: z.string().min(1) }) },
  responses: emptyResponses(),
});

/** The checks are the service's (`ApiKeysService`): this module maps HTTP onto it. */
export const adminApiKeyRoutes: RouteModule<{ apiKeys: ApiKeysService }> = (app, { apiKeys }) => {
  app.openapi(list, async (c) => c.json({ apiKeys: await apiKeys.list(c.get("principal")) }, 200));

  app.openapi(create, async (c) => {
    const key = randomSecret();
    const info = await apiKeys.add(c.get("principal"), key, c.req.valid("json")?.label ?? "");
    return c.json({ ...info, key }, 200);
  });

  app.openapi(remove, async (c) => {
    await apiKeys.delete(c.get("principal"), c.req.valid("param").id);
    return c.body(null, 200);
  });
};
