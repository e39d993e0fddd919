import { createRoute, z } from "@hono/zod-openapi";
import type { DomainsService } from "../../auth/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";

const DomainSchema = z
  .object({
    id: z.string(),
    parent: z.string().nullable(),
    label: z.string(),
    path: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Domain");

const IdParam = z.object({ id: z.string().min(1) });
const tags = ["admin: domains"];

const list = createRoute({
  method: "get",
  path: "/admin/domains",
  tags,
  summary: "Domains where the caller holds Domains.READ",
  responses: jsonResponses(z.object({ domains: z.array(DomainSchema) })),
});
const get = createRoute({
  method: "get",
  path: "/admin/domains/{id}",
  tags,
  request: { params: IdParam },
  responses: jsonResponses(DomainSchema),
});
const create = createRoute({
  method: "post",
  path: "/admin/domains",
  tags,
  summary: "Create a sub-domain; needs Domains.CREATE on the parent",
  request: jsonBody(
    z.object({
      id: z.string().min(1).max(64),
      parent: z.string().min(1),
      label: z.string().min(1).max(256).optional(),
    }),
  ),
  responses: jsonResponses(DomainSchema, "Created"),
});
const update = createRoute({
  method: "patch",
  path: "/admin/domains/{id}",
  tags,
  request: { params: IdParam, ...jsonBody(z.object({ label: z.string().min(1).max(256) })) },
  responses: jsonResponses(DomainSchema),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/domains/{id}",
  tags,
  summary: "Delete an empty domain",
  request: { params: IdParam },
  responses: emptyResponses(),
});

/** The checks are the service's (`DomainsService`): this module maps HTTP onto it. */
export const adminDomainRoutes: RouteModule<{ domains: DomainsService }> = (app, { domains }) => {
  app.openapi(list, (c) => c.json({ domains: domains.list(c.get("principal")) }, 200));

  app.openapi(get, (c) => c.json(domains.get(c.get("principal"), c.req.valid("param").id), 200));

  app.openapi(create, async (c) => c.json(await domains.create(c.get("principal"), c.req.valid("json")), 200));

  app.openapi(update, async (c) =>
    c.json(await domains.update(c.get("principal"), c.req.valid("param").id, c.req.valid("json").label), 200),
  );

  app.openapi(remove, async (c) => {
    await domains.delete(c.get("principal"), c.req.valid("param").id);
    return c.body(null, 200);
  });
};
