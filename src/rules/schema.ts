import { z } from "zod";
import { ACTION_TYPES, OPERATORS } from "../rule-model/index.js";

/** Ids given on CREATE; generated ids have the same shape. */
export const RULE_ID = /^[0-9A-Za-z_.:-]{1,128}$/;
export const CATEGORY = /^[0-9a-zA-Z.]*$/;

const Point = z.tuple([z.number(), z.number()]);
const Poi = z.object({
  center: z.object({ lat: z.union([z.string(), z.number()]), lon: z.union([z.string(), z.number()]) }),
  radius: z.number().positive(),
});

export const ExpressionItemSchema = z.object({
  operator: z.enum(OPERATORS),
  resource: z.string().min(1),
  value: z.union([z.number(), z.string(), Poi, z.array(Point)]),
});

export const ActionItemSchema = z.object({
  // Any string here: an unknown type is an invalid action config (INVALID_RULE_CONFIG), checked with the config.
  type: z.string().describe(`one of ${ACTION_TYPES.join(", ")}`),
  // Checked per type after the shape, so that a bad config answers INVALID_RULE_CONFIG.
  config: z.unknown().refine((v) => v !== undefined, "is required"),
});

export const FilterSchema = z.object({
  domain: z.string().min(1),
  thingType: z.string().min(1),
  thingNames: z.array(z.string().min(1)).max(1000).optional(),
});

export const ThresholdSchema = z.object({
  count: z.number().int().min(1),
  interval: z.number().min(0),
});

const fields = {
  name: z.string().min(1).max(256),
  description: z.string().max(4096).optional(),
  category: z.string().max(256).regex(CATEGORY, "only the characters 0-9, a-z, A-Z and '.'").optional(),
  enabled: z.boolean(),
  filter: FilterSchema,
  expression: z.array(ExpressionItemSchema).min(1),
  threshold: ThresholdSchema,
  actions: z.array(ActionItemSchema).min(1).max(50),
};

/** UPDATE: the rule without `id` (the path names it). */
export const RuleBodySchema = z.object(fields);
/** CREATE: the rule with an optional `id`. */
export const CreateRuleBodySchema = z.object({
  id: z.string().regex(RULE_ID, "1-128 of 0-9 A-Z a-z _ . : -").optional(),
  ...fields,
});
export const BulkUpdateSchema = z.object({
  rules: z
    .array(z.object({ id: z.string().min(1), enabled: z.boolean() }))
    .min(1)
    .max(1000),
});

export type RuleBody = z.infer<typeof RuleBodySchema>;
export type CreateRuleBody = z.infer<typeof CreateRuleBodySchema>;
export type BulkUpdateBody = z.infer<typeof BulkUpdateSchema>;

export const DryRunSchema = z.object({
  rule: CreateRuleBodySchema,
  observations: z
    .array(
      z.object({
        thingName: z.string().min(1).optional(),
        timestamp: z.union([z.number(), z.string()]).optional(),
        state: z.record(z.string(), z.unknown()),
        nested: z
          .array(
            z.object({
              type: z.string().optional(),
              id: z.string().optional(),
              state: z.record(z.string(), z.unknown()),
            }),
          )
          .optional(),
      }),
    )
    .min(1)
    .max(1000),
});
export type DryRunBody = z.infer<typeof DryRunSchema>;
