import type { Payload } from "../support/http.js";

/** A REST caller of one node with the credentials of a user (a token issued by any node). */
export class NodeClient {
  constructor(
    readonly url: string,
    private readonly apiKey: string,
    private readonly token: string,
  ) {}

  /** Logs in at `url` and answers a caller of that node. */
  static async login(url: string, apiKey: string, userName: string, password: string): Promise<NodeClient> {
    const res = await fetch(`${url}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": apiKey },
      body: JSON.stringify({ userName, password }),
    });
    if (res.status !== 200) throw new Error(`login at ${url}: ${res.status} ${await res.text()}`);
    const { credentials } = (await res.json()) as { credentials: { token: string } };
    return new NodeClient(url, apiKey, credentials.token);
  }

  /** The same credentials at another node. */
  at(url: string): NodeClient {
    return new NodeClient(url, this.apiKey, this.token);
  }

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Payload }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        "x-api-key": this.apiKey,
        authorization: this.token,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: Payload = text;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: the text as it came.
    }
    return { status: res.status, body: parsed };
  }

  /** The call's body when it answers 200; anything else throws with the answer. */
  async ok(method: string, path: string, body?: unknown): Promise<Payload> {
    const res = await this.call(method, path, body);
    if (res.status !== 200) throw new Error(`${method} ${this.url}${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }
}

/** The same path and query at another node: a signed URL made by one node, sent to another. */
export function atNode(signedUrl: string, nodeUrl: string): string {
  const u = new URL(signedUrl);
  return `${nodeUrl}${u.pathname}${u.search}`;
}

/** The partitions a node's engine reports a consumer lag for on `/metrics` (those it consumed since it last joined). */
export async function consumedPartitions(nodeUrl: string, topic: string): Promise<Set<number>> {
  const res = await fetch(`${nodeUrl}/metrics`).catch(() => undefined);
  if (res?.status !== 200) return new Set();
  const text = await res.text();
  const found = new Set<number>();
  for (const [, labels] of text.matchAll(/^dms_kafka_consumer_lag\{([^}]*)\} /gm)) {
    const t = /topic="([^"]*)"/.exec(labels!)?.[1];
    const p = /partition="(\d+)"/.exec(labels!)?.[1];
    if (t === topic && p !== undefined) found.add(Number(p));
  }
  return found;
}

/** A gauge or counter's value on a node's `/metrics` (the sum over its labels), 0 when absent. */
export async function metricValue(nodeUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${nodeUrl}/metrics`)).text();
  let sum = 0;
  for (const [, value] of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))) sum += Number(value);
  return sum;
}
