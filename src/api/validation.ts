import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "../errors/index.js";

type Issue = z.core.$ZodIssue;

/**
 * Turns the first schema issue into the interface's error: a property that
 * is absent is PROPERTY_REQUIRED, one that is present but wrong is
 * INVALID_ARGUMENTS; both name the property by its dotted path.
 */
export function issueToError(issue: Issue, input: unknown, target: string): ApiError {
  const path = issue.path.map(String);
  const property = path.length > 0 ? path.join(".") : target === "json" ? "body" : target;
  if (path.length > 0 && valueAt(input, issue.path) === undefined && issue.code !== "unrecognized_keys") {
    return new ApiError("PROPERTY_REQUIRED", `Property ${property} is required`, property);
  }
  return new ApiError("INVALID_ARGUMENTS", `Property ${property} is invalid: ${issue.message}`, property);
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

interface HookResult {
  success: boolean;
  error?: { issues: Issue[] };
  /** The raw input: zod-validator passes it, though its types do not say so. */
  data?: unknown;
  target: string;
}

/** The zod-openapi default hook: a failed validation throws the keyed error. */
export function validationHook(result: HookResult, _c: Context): void {
  if (result.success || !result.error) return;
  const issue = result.error.issues[0];
  if (!issue) throw new ApiError("INVALID_ARGUMENTS", "Invalid request");
  throw issueToError(issue, result.data, result.target);
}
