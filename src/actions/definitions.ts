import type { ActionType } from "../rule-model/index.js";
import type { ActionDefinition, ValidationOptions } from "./action.js";
import { emailAction } from "./email.js";
import { eventAction } from "./event.js";
import { setResourceAction } from "./set-resource.js";
import { smsAction } from "./sms.js";
import { strings, parseTemplate, TemplateError, TEMPLATE_MAX_VARIABLES } from "./template.js";
import { webhookAction } from "./webhook.js";

export const ACTION_DEFINITIONS: Readonly<Record<ActionType, ActionDefinition<Record<string, unknown>>>> = {
  WEBHOOK: webhookAction,
  EMAIL: emailAction,
  SET_RESOURCE: setResourceAction,
  SMS: smsAction,
  EVENT: eventAction,
};

/**
 * At most this many `${...}` in one action config, all strings together: with
 * the per-expression budget it bounds both the check at CREATE and one delivery's substitution.
 */
export const ACTION_MAX_VARIABLES = 2 * TEMPLATE_MAX_VARIABLES;

export type ConfigCheck =
  { ok: true; config: Record<string, unknown> } | { ok: false; path: string[]; message: string };

/**
 * Validates an action config as a rule saves it: its shape, and every
 * `${...}` in every string must parse. Answers the config without unknown
 * fields, or the first problem with its path inside the config.
 */
export function checkActionConfig(type: ActionType, config: unknown, options: ValidationOptions): ConfigCheck {
  const parsed = ACTION_DEFINITIONS[type].schema(options).safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map(String);
    const absent = issue.code === "invalid_type" && valueAt(config, path) === undefined;
    return { ok: false, path, message: absent ? "is required" : issue.message };
  }
  let variables = 0;
  for (const [path, text] of strings(parsed.data)) {
    variables += text.split("${").length - 1;
    if (variables > ACTION_MAX_VARIABLES) {
      return { ok: false, path, message: `more than ${ACTION_MAX_VARIABLES} \${...} variables in one action` };
    }
    try {
      parseTemplate(text);
    } catch (e) {
      if (e instanceof TemplateError) return { ok: false, path, message: e.message };
      throw e;
    }
  }
  return { ok: true, config: parsed.data };
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let v = value;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}
