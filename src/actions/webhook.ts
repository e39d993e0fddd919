import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import got, { RequestError } from "got";
import { z } from "zod";
import { DEFAULT_RETRY, PermanentFailure, defineAction } from "./action.js";
import { hostProblem, publicOnlyLookup, resolvedProblem } from "./net.js";

export const WEBHOOK_METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD"] as const;
/** A request that has not answered in this time is a failed attempt. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const RetrySchema = z.object({
  interval: z.number().int().min(1).max(600),
  maxAttempts: z.number().int().min(0).max(5),
  backOffRate: z.number().min(1).max(4),
});

const WebhookConfig = z.object({
  uri: z.string().min(1),
  method: z.enum(WEBHOOK_METHODS).optional(),
  includeAllEventData: z.boolean().optional(),
  body: z.string().optional(),
  authorizationHeader: z.string().optional(),
  additionalHeaders: z.array(z.object({ header: z.string().regex(HEADER_NAME), value: z.string() })).optional(),
  retry: RetrySchema.optional(),
});
export type WebhookConfig = z.infer<typeof WebhookConfig>;

/** Why `uri` cannot be a webhook target, or undefined. A uri with `${...}` is checked at delivery. */
function uriProblem(uri: string, allowPrivate: boolean): string | undefined {
  if (uri.includes("${")) return undefined;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "not a URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "only http and https are supported";
  const problem = allowPrivate ? undefined : hostProblem(url.hostname);
  return problem && `${url.hostname} is not a public address: ${problem}`;
}

/**
 * The DNS half of the CREATE/UPDATE check, which the synchronous schema cannot
 * do: each WEBHOOK whose literal uri names a host must not resolve to a
 * non-public address now. Answers the first problem as `{index, message}`.
 */
export async function webhookDnsProblem(
  actions: readonly { type: string; config: unknown }[],
  allowPrivate: boolean,
): Promise<{ index: number; message: string } | undefined> {
  if (allowPrivate) return undefined;
  for (const [index, action] of actions.entries()) {
    const uri = (action.config as { uri?: unknown } | null)?.uri;
    if (action.type !== "WEBHOOK" || typeof uri !== "string" || uri.includes("${") || !URL.canParse(uri)) continue;
    const problem = await resolvedProblem(new URL(uri).hostname);
    if (problem) return { index, message: problem };
  }
  return undefined;
}

const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
};

export const webhookAction = defineAction<WebhookConfig>({
  type: "WEBHOOK",
  schema: ({ allowPrivateWebhooks }) =>
    WebhookConfig.superRefine((c, ctx) => {
      if (!c.includeAllEventData && c.body === undefined) {
        ctx.addIssue({ code: "custom", path: ["body"], message: "required when includeAllEventData is not true" });
      }
      const problem = uriProblem(c.uri, allowPrivateWebhooks);
      if (problem) ctx.addIssue({ code: "custom", path: ["uri"], message: problem });
    }),
  retry: (c) => c.retry ?? DEFAULT_RETRY,
  create: ({ config }) => {
    const allowPrivate = config.DMS_WEBHOOK_ALLOW_PRIVATE;
    return async ({ config: c, payload, idempotencyKey }) => {
      const uri = String(c.uri);
      const problem = uriProblem(uri, allowPrivate);
      if (problem) throw new PermanentFailure(`uri ${uri}: ${problem}`);
      const method = c.method ?? "POST";
      const headers: Record<string, string> = { "idempotency-key": idempotencyKey };
      let body: string | undefined;
      if (c.includeAllEventData) {
        body = JSON.stringify(payload);
        headers["content-type"] = "application/json";
      } else if (c.body !== undefined) {
        body = String(c.body);
        headers["content-type"] = looksLikeJson(body) ? "application/json" : "text/plain; charset=utf-8";
      }
      if (c.authorizationHeader) headers.authorization = String(c.authorizationHeader);
      for (const h of c.additionalHeaders ?? []) headers[h.header.toLowerCase()] = String(h.value);
      // GET and HEAD carry no body (got refuses one, and receivers ignore it).
      if (method === "GET" || method === "HEAD") {
        body = undefined;
        delete headers["content-type"];
      }
      try {
        const res = await got(uri, {
          method,
          headers,
          body,
          throwHttpErrors: false,
          followRedirect: false,
          retry: { limit: 0 },
          timeout: { request: WEBHOOK_TIMEOUT_MS },
          agent: agents,
          ...(allowPrivate ? {} : { dnsLookup: publicOnlyLookup }),
        });
        if (res.statusCode < 200 || res.statusCode >= 300) {
          throw new Error(`HTTP ${res.statusCode} from ${method} ${uri}`);
        }
      } catch (err) {
        if (err instanceof RequestError && err.code === "EPRIVATETARGET") throw new PermanentFailure(err.message);
        throw err;
      }
    };
  },
});

function looksLikeJson(text: string): boolean {
  const t = text.trimStart();
  if (!t.startsWith("{") && !t.startsWith("[")) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}
