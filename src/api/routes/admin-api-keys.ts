import { createRoute, z } from "@hono/zod-openapi";
import { ROOT_DOMAIN, authorize, requireReadWrite, type Identity } from "../../auth/index.js";
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

/** API keys identify client applications of the whole service, so they are managed on root only. */
export const adminApiKeyRoutes: RouteModule<{ identity: Identity }> = (app, { identity }) => {
  app.openapi(list, async (c) => {
    authorize(c.get("principal"), "ApiKeys.READ", ROOT_DOMAIN);
    return c.json({ apiKeys: await identity.apiKeys() }, 200);
  });

  app.openapi(create, async (c) => {
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ApiKeys.CREATE", ROOT_DOMAIN);
    const key = randomSecret();
    const info = await identity.addApiKey(key, c.req.valid("json")?.label ?? "");
    return c.json({ ...info, key }, 200);
  });

  app.openapi(remove, async (c) => {
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ApiKeys.DELETE", ROOT_DOMAIN);
    await identity.deleteApiKey(c.req.valid("param").id);
    return c.body(null, 200);
  });
};
