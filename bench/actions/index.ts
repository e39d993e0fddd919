/**
 * Webhook deliveries per second through the durable outbox to a local
 * receiver with 200 in flight, and the p99 from trigger to receipt. Side by
 * side in the same run: plain `got` calls with the same concurrency and no
 * outbox (the ceiling), and the outbox with a smaller pool.
 *
 * Closed loop: each run keeps `inFlight` actions outstanding; every receipt
 * lets one more action be triggered. The receiver is a node:http server in
 * this process, so the figures include its CPU share of this machine.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { Agent } from "node:http";
import type { AddressInfo } from "node:net";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import got from "got";
import type { RulePayload, TriggeredAction } from "../../src/actions/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase } from "../../src/store/index.js";
import { standaloneOutbox } from "../../test/support/outbox.js";
import { writeSection } from "../results.js";

const TOTAL = Number(process.env.BENCH_ACTIONS_TOTAL ?? 6000);
const WARMUP = 500;
const COMMAND = "npx tsx bench/actions/index.ts";

interface Figures {
  name: string;
  inFlight: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** A receiver that reports each request's trigger time (sent in a header) as it arrives. */
async function receiver(
  onReceipt: (triggeredAt: number, index: number) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200).end();
      onReceipt(Number(req.headers["x-triggered-at"]), Number(String(req.headers["x-index"]).replace(/^o/, "")));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs a closed loop: `send(i)` starts action i; the receiver's receipts start the next ones. */
async function closedLoop(name: string, inFlight: number, send: (i: number, url: string) => void): Promise<Figures> {
  const latencies: number[] = [];
  let received = 0;
  let started = 0;
  let t0 = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const { url, server } = await receiver((triggeredAt, index) => {
    received++;
    if (received === WARMUP) t0 = performance.now();
    // Only actions triggered after the warm-up: the first burst pays for opening the connections.
    if (index >= WARMUP) latencies.push(Date.now() - triggeredAt);
    if (started < TOTAL + WARMUP) send(started++, url);
    if (received === TOTAL + WARMUP) done();
  });
  for (; started < inFlight; started++) send(started, url);
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  server.closeAllConnections();
  server.close();
  latencies.sort((a, b) => a - b);
  return { name, inFlight, perSecond: TOTAL / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

function payload(i: number, at: number): RulePayload {
  return {
    rule: { id: "bench", name: "bench", domain: "root" },
    thing: { thingName: `t${i % 100}`, thingType: "10", domain: "root", state: {} },
    observation: { id: `o${i}`, timestamp: at, state: { temp: i } },
    timestamp: at,
    isoTimestamp: new Date(at).toISOString(),
  };
}

async function outboxRun(name: string, inFlight: number): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-actions-"));
  const db = openDatabase({ dataDir: dir, migrations });
  const outbox = standaloneOutbox(db, { env: { DMS_WEBHOOK_ALLOW_PRIVATE: "true" }, concurrency: inFlight });
  await outbox.start();
  const run = `${name}-${Date.now()}`;
  try {
    return await closedLoop(name, inFlight, (i, url) => {
      const at = Date.now();
      const action: TriggeredAction = {
        idempotencyKey: `${run}:${i}`,
        ruleId: "bench",
        thingName: `t${i % 100}`,
        type: "WEBHOOK",
        config: {
          uri: url,
          body: '{"thing":"${thing.thingName}","temp":${observation.temp}}',
          additionalHeaders: [
            { header: "x-triggered-at", value: "${timestamp}" },
            { header: "x-index", value: "${observation.id}" },
          ],
        },
        payload: payload(i, at),
      };
      void outbox.accept([action]);
    });
  } finally {
    await outbox.stop();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function directRun(inFlight: number): Promise<Figures> {
  const agent = { http: new Agent({ keepAlive: true, maxSockets: 256 }) };
  return closedLoop("got, no outbox (ceiling)", inFlight, (i, url) => {
    const at = Date.now();
    void got(url, {
      method: "POST",
      body: `{"thing":"t${i % 100}","temp":${i}}`,
      headers: { "x-triggered-at": String(at), "x-index": String(i), "idempotency-key": `k${i}` },
      retry: { limit: 0 },
      agent,
    });
  });
}

function report(rows: Figures[]): string {
  const base = rows.find((r) => r.name.startsWith("outbox") && r.inFlight === 200)!;
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  const line = (cells: (string | number)[]): string => `| ${cells.join(" | ")} |`;
  return [
    "## actions: webhook delivery through the outbox",
    "",
    `- machine: ${cpu}, ${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}`,
    `- rerun: \`${COMMAND}\` (BENCH_ACTIONS_TOTAL=${TOTAL} measured deliveries per row after ${WARMUP} warm-up)`,
    "- closed loop: a receipt triggers the next action, so `in flight` actions are always outstanding; receiver on loopback in the same process; SQLite file in WAL mode; latency = trigger (accept) to receipt, for actions triggered after the warm-up",
    "",
    line(["run", "in flight", "deliveries/s", "p50 ms", "p99 ms", "deliveries/s vs outbox@200"]),
    line(["---", "---", "---", "---", "---", "---"]),
    ...rows.map((r) =>
      line([
        r.name,
        r.inFlight,
        Math.round(r.perSecond),
        r.p50,
        r.p99,
        `${(r.perSecond / base.perSecond).toFixed(2)}x`,
      ]),
    ),
  ].join("\n");
}

const rows: Figures[] = [];
rows.push(await outboxRun("outbox (durable, substituted)", 200));
rows.push(await outboxRun("outbox (durable, substituted)", 50));
rows.push(await directRun(200));
const text = report(rows);
console.log(text);
writeSection("actions", text);
