import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import type { RulePayload, Timers, TriggeredAction } from "../../src/actions/index.js";
import type { ActionType } from "../../src/rules/index.js";
import { until as waitUntil } from "../support/wait.js";

/** A fake clock with timers: time moves only when the test says so, so retry waits are exact. */
export class ManualClock implements Timers {
  private t: number;
  private queue: { at: number; fn: () => void; id: number }[] = [];
  private seq = 0;

  constructor(start = Date.now()) {
    this.t = start;
  }

  now = (): number => this.t;

  setTimeout = (fn: () => void, ms: number): (() => void) => {
    const id = ++this.seq;
    this.queue.push({ at: this.t + Math.max(0, ms), fn, id });
    return () => {
      this.queue = this.queue.filter((q) => q.id !== id);
    };
  };

  /** Moves time forward, running each timer that falls due in order. */
  advance(ms: number): void {
    const until = this.t + ms;
    for (;;) {
      this.queue.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.queue[0];
      if (!next || next.at > until) break;
      this.queue.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = until;
  }
}

export interface Received {
  at: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP server on loopback that records requests and answers what `respond` says. */
export class Receiver {
  readonly requests: Received[] = [];
  respond: (req: Received, n: number) => { status: number; body?: string; headers?: Record<string, string> } = () => ({
    status: 200,
  });
  private server: Server | undefined;
  url = "";

  constructor(private readonly clock: () => number = Date.now) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r: Received = {
          at: this.clock(),
          method: req.method ?? "",
          url: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        };
        this.requests.push(r);
        const answer = this.respond(r, this.requests.length);
        res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
        res.end(answer.body ?? "{}");
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export interface Mail {
  from: string;
  to: string[];
  data: string;
}

/** A real SMTP server (smtp-server) on loopback. */
export class MailReceiver {
  readonly mails: Mail[] = [];
  private server: SMTPServer | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          this.mails.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((r) => r.address),
            data: Buffer.concat(chunks).toString(),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const address = this.server.server.address() as AddressInfo;
    this.url = `smtp://127.0.0.1:${address.port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Polls `check` until it holds (real time), for effects of asynchronous deliveries. */
export function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  return waitUntil(check, timeoutMs, what, 5);
}

let observationSeq = 0;

/** A triggered action as the engine hands it to the ActionSink. */
export function triggered(
  type: ActionType,
  config: Record<string, unknown>,
  options: { ruleId?: string; thingName?: string; state?: Record<string, unknown>; at?: number; domain?: string } = {},
): TriggeredAction {
  const ruleId = options.ruleId ?? "rule-1";
  const thingName = options.thingName ?? "t1";
  const observationId = `obs-${++observationSeq}`;
  const at = options.at ?? Date.now();
  const payload: RulePayload = {
    rule: { id: ruleId, name: "hot", category: "cat.a", domain: options.domain ?? "acme" },
    thing: { thingName, thingType: "10", domain: options.domain ?? "acme", state: { temp: 20 } },
    observation: { id: observationId, timestamp: at, state: options.state ?? { temp: 35 } },
    timestamp: at,
    isoTimestamp: new Date(at).toISOString(),
  };
  return { idempotencyKey: `${ruleId}:${thingName}:${observationId}:0`, ruleId, thingName, type, config, payload };
}
