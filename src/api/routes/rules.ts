import { createRoute, z } from "@hono/zod-openapi";
import { webhookDnsProblem } from "../../actions/index.js";
import { ApiError, required } from "../../errors/index.js";
import {
  BulkUpdateSchema,
  CreateRuleBodySchema,
  DryRunSchema,
  RuleBodySchema,
  type RulesService,
} from "../../rules/index.js";
import type { Config } from "../../config/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";

const RuleSchema = RuleBodySchema.extend({
  id: z.string(),
  actions: z.array(z.object({ type: z.string(), config: z.record(z.string(), z.unknown()) })),
  readonly: z.boolean(),
}).openapi("Rule");
const IdParam = z.object({ id: z.string() });
/** A blank id (`/rules/%20`) is a missing one. */
const idOf = (id: string): string => {
  if (id.trim() === "") throw required("id");
  return id;
};
const tags = ["rules"];

const list = createRoute({
  method: "get",
  path: "/rules",
  tags,
  summary: "LIST: the rules the caller may see; rules of ancestor domains are readonly",
  responses: jsonResponses(z.array(RuleSchema)),
});
const create = createRoute({
  method: "post",
  path: "/rules",
  tags,
  summary: "CREATE: a rule, with a generated id when none is given",
  request: jsonBody(CreateRuleBodySchema),
  responses: {
    ...jsonResponses(RuleSchema, "Created"),
    409: { description: "RULE_ID_EXISTS" },
  },
});
const get = createRoute({
  method: "get",
  path: "/rules/{id}",
  tags,
  summary: "GET: one rule",
  request: { params: IdParam },
  responses: jsonResponses(RuleSchema),
});
const update = createRoute({
  method: "put",
  path: "/rules/{id}",
  tags,
  summary: "UPDATE: replace a rule; changing filter.domain moves it (Rules.DELETE on the old, Rules.CREATE on the new)",
  request: { params: IdParam, ...jsonBody(RuleBodySchema) },
  responses: jsonResponses(RuleSchema),
});
const remove = createRoute({
  method: "delete",
  path: "/rules/{id}",
  tags,
  summary: "REMOVE: delete a rule",
  request: { params: IdParam },
  responses: emptyResponses(),
});
const bulk = createRoute({
  method: "patch",
  path: "/rules",
  tags,
  summary: "BULK UPDATE: set enabled on many rules; failures are listed in errors[], the rest applied",
  request: jsonBody(BulkUpdateSchema),
  responses: jsonResponses(
    z.object({
      updated: z.array(RuleSchema),
      errors: z.array(z.object({ id: z.string(), message: z.string() })),
    }),
  ),
});

const ActionOut = z.object({ type: z.string(), config: z.record(z.string(), z.unknown()) });
const test = createRoute({
  method: "post",
  path: "/rules/test",
  tags,
  summary:
    "Dry run: which of the given observations would trigger the rule, and the substituted action configs; nothing is stored or sent",
  request: jsonBody(DryRunSchema),
  responses: jsonResponses(
    z
      .object({
        triggeredCount: z.number(),
        results: z.array(
          z.object({
            index: z.number(),
            thingName: z.string(),
            inFilter: z.boolean(),
            matched: z.boolean(),
            expressions: z.array(z.object({ operator: z.string(), resource: z.string(), matched: z.boolean() })),
            triggered: z.boolean(),
            actions: z.array(ActionOut).optional(),
            unknownVariables: z.array(z.string()).optional(),
          }),
        ),
      })
      .openapi("RuleDryRun"),
  ),
});

export const ruleRoutes: RouteModule<{ rules: RulesService; config: Pick<Config, "DMS_WEBHOOK_ALLOW_PRIVATE"> }> = (
  app,
  { rules, config },
) => {
  /** A webhook host that resolves to a non-public address now is refused at once (delivery checks again). */
  const checkDns = async (actions: readonly { type: string; config: unknown }[]): Promise<void> => {
    const problem = await webhookDnsProblem(actions, config.DMS_WEBHOOK_ALLOW_PRIVATE);
    if (!problem) return;
    const property = `actions.${problem.index}.config.uri`;
    throw new ApiError(
      "INVALID_RULE_CONFIG",
      `Action ${problem.index} (WEBHOOK): ${property} ${problem.message}`,
      property,
    );
  };
  app.openapi(list, async (c) => c.json(await rules.list(c.get("principal")), 200));
  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    await checkDns(body.actions);
    return c.json(await rules.create(c.get("principal"), body), 200);
  });
  app.openapi(test, async (c) => {
    const { rule, observations } = c.req.valid("json");
    await checkDns(rule.actions);
    return c.json(rules.test(c.get("principal"), rule, observations), 200);
  });
  app.openapi(get, async (c) => c.json(await rules.get(c.get("principal"), idOf(c.req.valid("param").id)), 200));
  app.openapi(update, async (c) => {
    const body = c.req.valid("json");
    await checkDns(body.actions);
    return c.json(await rules.update(c.get("principal"), idOf(c.req.valid("param").id), body), 200);
  });
  app.openapi(remove, async (c) => {
    await rules.remove(c.get("principal"), idOf(c.req.valid("param").id));
    return c.body(null, 200);
  });
  // UPDATE and REMOVE without an id in the path name the missing property rather than a missing route.
  app.put("/rules", () => {
    throw required("id");
  });
  app.delete("/rules", () => {
    throw required("id");
  });
  app.openapi(bulk, async (c) => c.json(await rules.bulkUpdate(c.get("principal"), c.req.valid("json")), 200));
};
