import { request as httpRequest } from "node:http";
import { freePortRange } from "../support/ports.js";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";

/**
 * What the MIC client replays share: a dms provisioned with a public client
 * key and started on a known port, so that DMS_PUBLIC_URL (the manifest's
 * ApiGatewayRootUrl) can name it, and an HTTP call made the way the Node
 * clients (axios over node:http) make it.
 */

/** The public client key; the bash CLI refuses an ApiKey shorter than 40 characters. */
export const PUBLIC_KEY = "mic-public-client-key-0123456789abcdefghijklmnopqrstuv";
export const STACK = "demo";
/** The portal host name the clients pass as `hostname`; dms answers for any. */
export const PORTAL_HOST = "demo.mic.example.com";

export interface MicDms extends TestDms {
  port: number;
}

/** A dms whose manifest names `publicUrl(port)` as its ApiGatewayRootUrl. */
export async function startMicDms(
  publicUrl: (port: number) => string = (p) => `http://127.0.0.1:${p}`,
  env: Record<string, string> = {},
): Promise<MicDms> {
  const { first: port } = await freePortRange(1);
  const dms = await startTestDms({
    env: { DMS_HTTP_PORT: String(port), DMS_PUBLIC_URL: publicUrl(port), DMS_STACK_NAME: STACK, ...env },
    provision: { ...BASE_PROVISION, apiKeys: [...(BASE_PROVISION.apiKeys ?? []), { key: PUBLIC_KEY, public: true }] },
  });
  return Object.assign(dms, { port });
}

export interface Answer<T> {
  status: number;
  contentType: string;
  text: string;
  /** The parsed body, typed as the replaying client reads it (undefined when not JSON). */
  json: T;
}

/**
 * One request through node:http, as axios sends it in Node: a header whose
 * value is undefined makes node:http throw (ERR_HTTP_INVALID_HEADER_VALUE)
 * before anything is sent, which is what broke the Node clients when login
 * carried no identityId.
 */
export function send<T = Record<string, unknown>>(
  method: string,
  url: string,
  headers: Record<string, string | undefined> = {},
  body?: unknown,
): Promise<Answer<T>> {
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const contentType = String(res.headers["content-type"] ?? "");
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, contentType, text, json: json as T });
      });
    });
    req.on("error", reject);
    try {
      for (const [name, value] of Object.entries(headers)) req.setHeader(name, value as string);
      if (payload !== undefined) {
        if (!req.hasHeader("content-type")) req.setHeader("content-type", "application/json");
        req.setHeader("content-length", Buffer.byteLength(payload));
      }
    } catch (e) {
      req.destroy();
      reject(e as Error);
      return;
    }
    req.end(payload);
  });
}

/** A rule the replays create: an event when temp is over 30. */
export const HOT_RULE = {
  name: "hot",
  enabled: true,
  filter: { domain: "acme", thingType: "10" },
  expression: [{ operator: "gt", resource: "temp", value: 30 }],
  threshold: { count: 1, interval: 60 },
  actions: [{ type: "EVENT", config: { classification: "ALARM", message: "hot", acknowledgmentRequired: false } }],
};

/** The login and refresh answer as the clients read it. */
export interface LoginAnswer {
  user: { userName: string; roleName: string; domainName: string; domainPath: string };
  credentials: { identityId: string; token: string; refreshToken: string };
  permissions: { objects: Record<string, string[]> };
}

export interface Manifest {
  ApiGatewayRootUrl: string;
  StackName: string;
}

export interface SearchAnswer {
  hits: { total: number; hits: { _id: string; _source: Record<string, unknown> }[] };
}
