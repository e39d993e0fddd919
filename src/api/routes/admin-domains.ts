import { createRoute, z } from "@hono/zod-openapi";
import { authorize, requireReadWrite, type Domain, type Identity } from "../../auth/index.js";
import { notFound } from "../../errors/index.js";
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

export const adminDomainRoutes: RouteModule<{ identity: Identity }> = (app, { identity }) => {
  const existing = (id: string): Domain => {
    const domain = identity.domain(id);
    if (!domain) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "id");
    return domain;
  };

  app.openapi(list, (c) => {
    const principal = c.get("principal");
    return c.json({ domains: identity.domains().filter((d) => principal.can("Domains.READ", d.id)) }, 200);
  });

  app.openapi(get, (c) => {
    const domain = existing(c.req.valid("param").id);
    authorize(c.get("principal"), "Domains.READ", domain.id);
    return c.json(domain, 200);
  });

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    existing(body.parent);
    authorize(principal, "Domains.CREATE", body.parent);
    return c.json(await identity.createDomain(body.id, body.parent, body.label), 200);
  });

  app.openapi(update, async (c) => {
    const domain = existing(c.req.valid("param").id);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "Domains.UPDATE", domain.id);
    return c.json(await identity.updateDomain(domain.id, c.req.valid("json").label), 200);
  });

  app.openapi(remove, async (c) => {
    const domain = existing(c.req.valid("param").id);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "Domains.DELETE", domain.id);
    await identity.deleteDomain(domain.id);
    return c.body(null, 200);
  });
};
