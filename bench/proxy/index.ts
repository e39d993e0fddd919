/**
 * bench/proxy: throughput of one session against a direct loopback connection
 * in the same run, and many concurrent sessions each moving 1 MiB.
 *
 * The proxy runs as its own process (a real `dms` with `DMS_ROLES=proxy`);
 * this process is the device and the client in both measurements, and the
 * server and client in the direct one, so the generator's work is the same
 * and the ratio shows what the proxy hop costs.
 *
 * The machine is shared and noisy, so each round measures every transfer back
 * to back, rotating which goes first, after one untimed warm-up of each; the
 * ratio reported is the median of the per-round ratios, next to the medians of
 * each. A C read/write forwarder (forwarder.c) is measured the same way as the
 * reference: what any forwarder that copies costs on this machine.
 *
 *   npx tsx bench/proxy/index.ts [--gib 1] [--sessions 1000] [--rounds 5]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokens } from "../../src/auth/index.js";
import { freePortRange } from "../../test/support/ports.js";
import { fullGc } from "../gc.js";
import { writeSection } from "../results.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MiB = 1024 * 1024;
const API_KEY = "bench-api-key-0001";
const SECRET = "bench-secret-bench-secret-bench-secret";

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length - 1; i += 2)
  args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const GIB = positive("gib", 1);
const SESSIONS = positive("sessions", 1000);
const ROUNDS = positive("rounds", 5);
/** Whole bytes: a fractional --gib must not leave a fraction of a byte that never arrives. */
const BYTES = Math.round(GIB * 1024 * MiB);
const WARM_UP_BYTES = Math.min(BYTES, 64 * MiB);
const SESSION_BYTES = 1 * MiB;
const CHUNK = Buffer.alloc(256 * 1024, 0x5a);

interface Proxy {
  child: ChildProcess;
  devicePort: number;
  control: (path: string, serial: string) => Promise<Response>;
  dataDir: string;
}

async function main(): Promise<void> {
  const command = `npx tsx bench/proxy/index.ts --gib ${GIB} --sessions ${SESSIONS} --rounds ${ROUNDS}`;
  const header = [
    `machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores, Node ${process.version}`,
    `date: ${new Date().toISOString()}, load average at start ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} (the machine is shared)`,
    `rerun: \`${command}\``,
  ];
  console.log(header.join("\n"));

  const proxy = await startProxy();
  const reference = await startReference();
  try {
    const bytes = BYTES;
    const { direct, proxied, ratios, directCpuSeconds, proxyCpuSeconds, forwarded, referenceRatios } =
      await throughputRounds(proxy, reference);
    const d = median(direct);
    const p = median(proxied);
    const ratio = median(ratios);
    const referenceRows = reference
      ? [
          `| ${GIB} GiB through a C read/write forwarder (reference, median of ${ROUNDS}) | ${mibps(bytes, median(forwarded))} MiB/s (${median(forwarded).toFixed(0)} ms) |`,
          `| ratio C forwarder / direct, median of the per-round ratios | ${median(referenceRatios.map((r) => r.reference)).toFixed(2)} |`,
          `| ratio proxy / C forwarder, median of the per-round ratios | ${median(referenceRatios.map((r) => r.proxy)).toFixed(2)} |`,
        ]
      : [`| C read/write forwarder (reference) | not run: ${referenceSkipped} |`];

    const many = await concurrentRun(proxy, SESSIONS);
    const rows = [
      `| figure | value |`,
      `|---|---|`,
      `| ${GIB} GiB direct loopback (median of ${ROUNDS}) | ${mibps(bytes, d)} MiB/s (${d.toFixed(0)} ms) |`,
      `| ${GIB} GiB through the proxy (median of ${ROUNDS}) | ${mibps(bytes, p)} MiB/s (${p.toFixed(0)} ms) |`,
      `| ratio proxy / direct (target >= 0.8), median of the per-round ratios | ${ratio.toFixed(2)} |`,
      `| per-round ratios, in order | ${ratios.map((r) => r.toFixed(2)).join(" ")} |`,
      ...referenceRows,
      `| CPU per GiB: both ends of the direct connection / the proxy process forwarding | ${(directCpuSeconds / ROUNDS / GIB).toFixed(2)} s / ${(proxyCpuSeconds / ROUNDS / GIB).toFixed(2)} s |`,
      `| ${SESSIONS} concurrent sessions: set-up (device connect, /on, client connect) | ${many.setupMs.toFixed(0)} ms |`,
      `| ${SESSIONS} concurrent sessions x 1 MiB: transfer wall time | ${many.transferMs.toFixed(0)} ms (${mibps(SESSIONS * SESSION_BYTES, many.transferMs)} MiB/s aggregate) |`,
      `| proxy process RSS: idle / peak (VmHWM) | ${many.idleRssMiB.toFixed(0)} MiB / ${many.peakRssMiB.toFixed(0)} MiB |`,
    ];
    console.log(`\n${rows.join("\n")}`);
    writeSection(
      "proxy",
      [
        "## Proxy",
        "",
        ...header.map((h) => `${h}  `),
        "",
        "The proxy is a separate `dms` process (`DMS_ROLES=proxy`); device, client and the direct pair run in the benchmark process. Device to client direction, 256 KiB writes. Each round runs the transfers back to back, rotating which goes first, after one untimed 64 MiB warm-up of each; a ratio is the median of the per-round ratios (throughput proxied / direct). The reference is `bench/proxy/forwarder.c` (built with gcc when the benchmark starts): a thread per direction doing blocking read() and write() of 256 KiB, the least work a forwarder that copies can do, so `C forwarder / direct` is what the proxy hop costs on this machine whatever the forwarder is written in.",
        "",
        ...rows,
      ].join("\n"),
    );
  } finally {
    reference?.close();
    proxy.child.kill("SIGTERM");
    await new Promise((r) => proxy.child.once("exit", r));
    rmSync(proxy.dataDir, { recursive: true, force: true });
  }
}

interface Rounds {
  /** Milliseconds per round. */
  direct: number[];
  proxied: number[];
  /** Per round: proxied throughput / direct throughput. */
  ratios: number[];
  directCpuSeconds: number;
  proxyCpuSeconds: number;
  /** Milliseconds per round through the C forwarder (empty without gcc). */
  forwarded: number[];
  /** Per round: forwarder / direct and proxied / forwarder throughput. */
  referenceRatios: { reference: number; proxy: number }[];
}

/**
 * A full GC and a short pause before each transfer: the first transfer of a round left a GiB of
 * read buffers behind, and collecting them during the second made whichever ran second 10-20 %
 * slower (docs/proxy.md). Both transfers now start from the same clean heap.
 */
async function settle(): Promise<void> {
  fullGc();
  await sleep(200);
}

async function throughputRounds(proxy: Proxy, reference: Reference | undefined): Promise<Rounds> {
  await directRun(WARM_UP_BYTES);
  await proxiedRun(proxy, WARM_UP_BYTES);
  if (reference) await reference.run(WARM_UP_BYTES);
  const rounds: Rounds = {
    direct: [],
    proxied: [],
    ratios: [],
    directCpuSeconds: 0,
    proxyCpuSeconds: 0,
    forwarded: [],
    referenceRatios: [],
  };
  const measureDirect = async (): Promise<void> => {
    const own = process.cpuUsage();
    rounds.direct.push(await directRun(BYTES));
    const used = process.cpuUsage(own);
    rounds.directCpuSeconds += (used.user + used.system) / 1e6;
  };
  const measureProxied = async (): Promise<void> => {
    const before = cpuSeconds(proxy.child.pid!);
    rounds.proxied.push(await proxiedRun(proxy, BYTES));
    rounds.proxyCpuSeconds += cpuSeconds(proxy.child.pid!) - before;
  };
  const measureReference = async (): Promise<void> => void rounds.forwarded.push(await reference!.run(BYTES));
  const measures = reference ? [measureDirect, measureProxied, measureReference] : [measureDirect, measureProxied];
  for (let r = 0; r < ROUNDS; r++) {
    // Rotate the order so that no transfer always runs first (or second) in its round.
    const order = [...measures.slice(r % measures.length), ...measures.slice(0, r % measures.length)];
    for (const measure of order) {
      await settle();
      await measure();
    }
    const [d, p] = [rounds.direct[r]!, rounds.proxied[r]!];
    rounds.ratios.push(d / p);
    let line = `round ${r + 1}: direct ${mibps(BYTES, d)} MiB/s, proxied ${mibps(BYTES, p)} MiB/s, ratio ${(d / p).toFixed(2)}`;
    if (reference) {
      const f = rounds.forwarded[r]!;
      rounds.referenceRatios.push({ reference: d / f, proxy: f / p });
      line += `; C forwarder ${mibps(BYTES, f)} MiB/s (${(d / f).toFixed(2)} of direct; proxy ${(f / p).toFixed(2)} of it)`;
    }
    console.log(line);
  }
  return rounds;
}

// ---- the reference forwarder ----

interface Reference {
  /** Milliseconds to move `bytes` through the forwarder. */
  run(bytes: number): Promise<number>;
  close(): void;
}

let referenceSkipped = "";

/** Builds bench/proxy/forwarder.c and starts it in front of a receiving server of this process. */
async function startReference(): Promise<Reference | undefined> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-forwarder-"));
  const binary = join(dir, "forwarder");
  const build = spawnSync("gcc", ["-O2", "-o", binary, join(root, "bench/proxy/forwarder.c"), "-lpthread"], {
    encoding: "utf8",
  });
  if (build.status !== 0) {
    referenceSkipped = build.error ? `gcc not found (${build.error.message})` : `gcc failed: ${build.stderr.trim()}`;
    console.log(`C forwarder reference skipped: ${referenceSkipped}`);
    return undefined;
  }
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const target = (server.address() as { port: number }).port;
  const port = await freePort();
  const child = spawn(binary, [String(port), String(target)], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`forwarder exited with ${code}`)));
  });
  return {
    run: (bytes) => acceptedTransfer(server, port, bytes),
    close() {
      child.kill("SIGTERM");
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---- the proxy process ----

async function startProxy(): Promise<Proxy> {
  const dataDir = mkdtempSync(join(tmpdir(), "dms-bench-proxy-"));
  const things = [{ thingName: "big", thingType: "1", domain: "root", serial: "BIG" }];
  for (let i = 0; i < SESSIONS; i++)
    things.push({ thingName: `b${i}`, thingType: "1", domain: "root", serial: `B${i}` });
  const provision = {
    apiKeys: [API_KEY],
    domains: [{ id: "root" }],
    users: [
      { userName: "admin", password: "admin-pw", role: "ReadWrite", homeDomain: "root", privileges: { root: ["*.*"] } },
    ],
    thingTypes: [{ id: "1", domain: "root" }],
    things,
  };
  writeFileSync(join(dataDir, "provision.json"), JSON.stringify(provision));
  const [devicePort, controlPort] = [await freePort(), await freePort()];
  const range = await freePortRange(SESSIONS + 1);
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    env: {
      ...process.env,
      DMS_ROLES: "proxy",
      DMS_DATA_DIR: dataDir,
      DMS_PROVISION: join(dataDir, "provision.json"),
      DMS_JWT_SECRET: SECRET,
      DMS_LOG_LEVEL: "warn",
      DMS_HTTP_HOST: "127.0.0.1",
      DMS_PROXY_DEVICE_PORT: String(devicePort),
      DMS_PROXY_CONTROL_PORT: String(controlPort),
      DMS_PROXY_PORTS: `${range.first}-${range.last}`,
      DMS_PROXY_HOST: "127.0.0.1",
    },
  });
  const token = (await new Tokens(SECRET).issue("admin")).token;
  const control = (path: string, serial: string): Promise<Response> =>
    fetch(`http://127.0.0.1:${controlPort}${path}?serial=${encodeURIComponent(serial)}`, {
      headers: { "x-api-key": API_KEY, authorization: token },
    });
  for (let i = 0; ; i++) {
    const up = await control("/status", "BIG").then(
      (r) => r.status === 404,
      () => false,
    );
    if (up) break;
    if (i > 300) throw new Error("proxy did not start");
    await sleep(100);
  }
  return { child, devicePort, control, dataDir };
}

function rssMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const file = `/proc/${pid}/status`;
  if (!existsSync(file)) return NaN;
  const line = readFileSync(file, "utf8")
    .split("\n")
    .find((l) => l.startsWith(field));
  return Number(line?.match(/(\d+)/)?.[1] ?? NaN) / 1024;
}

/** User plus system CPU seconds the process has used so far (fields 14 and 15 of /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// ---- measurements ----

/** Milliseconds to move `bytes` over a plain loopback connection. */
async function directRun(bytes: number): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const ms = await acceptedTransfer(server, (server.address() as { port: number }).port, bytes);
  server.close();
  return ms;
}

/**
 * Milliseconds to move `bytes` from a connection to `port` to the connection `server` accepts
 * for it: the same server directly, or through a forwarder in front of it.
 */
async function acceptedTransfer(server: Server, port: number, bytes: number): Promise<number> {
  const accepted = new Promise<Socket>((r) => server.once("connection", r));
  const sender = await open(port);
  const receiver = await accepted;
  const ms = await transfer(sender, receiver, bytes);
  sender.destroy();
  receiver.destroy();
  return ms;
}

/** Milliseconds to move `bytes` from a device to a client through one proxy session. */
async function proxiedRun(proxy: Proxy, bytes: number): Promise<number> {
  const { device, client } = await session(proxy, "BIG");
  const ms = await transfer(device, client, bytes);
  await proxy.control("/off", "BIG");
  device.destroy();
  client.destroy();
  return ms;
}

async function concurrentRun(
  proxy: Proxy,
  n: number,
): Promise<{ setupMs: number; transferMs: number; idleRssMiB: number; peakRssMiB: number }> {
  const pid = proxy.child.pid!;
  const idleRssMiB = rssMiB(pid, "VmRSS");
  const t0 = performance.now();
  const pairs: { device: Socket; client: Socket }[] = [];
  const serials = Array.from({ length: n }, (_, i) => `B${i}`);
  // Set up in batches so /on requests do not all queue at once on one HTTP pool.
  for (let i = 0; i < n; i += 50) {
    pairs.push(...(await Promise.all(serials.slice(i, i + 50).map((s) => session(proxy, s)))));
  }
  const setupMs = performance.now() - t0;
  const t1 = performance.now();
  await Promise.all(pairs.map((p) => transfer(p.device, p.client, SESSION_BYTES)));
  const transferMs = performance.now() - t1;
  const peakRssMiB = rssMiB(pid, "VmHWM");
  for (let i = 0; i < n; i += 100) await Promise.all(serials.slice(i, i + 100).map((s) => proxy.control("/off", s)));
  for (const p of pairs) {
    p.device.destroy();
    p.client.destroy();
  }
  return { setupMs, transferMs, idleRssMiB, peakRssMiB };
}

/** A running session: the device has sent its serial, /on answered, the client is connected. */
async function session(proxy: Proxy, serial: string): Promise<{ device: Socket; client: Socket }> {
  const device = await open(proxy.devicePort);
  device.write(`${serial}\r`);
  const res = await proxy.control("/on", serial);
  if (res.status !== 200) throw new Error(`/on ${serial}: ${res.status} ${await res.text()}`);
  const { port } = (await res.json()) as { port: number };
  const client = await open(port);
  // The session pairs a device only once its serial line is read; wait until the proxy sees both.
  for (;;) {
    const s = (await (await proxy.control("/status", serial)).json()) as {
      device_connected: boolean;
      client_connected: boolean;
    };
    if (s.device_connected && s.client_connected) break;
    await sleep(2);
  }
  return { device, client };
}

/** Writes `bytes` with backpressure on `from`, resolves with the ms until `to` has read them all. */
function transfer(from: Socket, to: Socket, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let received = 0;
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received >= bytes) {
        to.off("data", onData);
        resolve(performance.now() - start);
      }
    };
    to.on("data", onData);
    to.once("error", reject);
    let written = 0;
    const pump = (): void => {
      while (written < bytes) {
        const n = Math.min(CHUNK.length, bytes - written);
        written += n;
        if (!from.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) return void from.once("drain", pump);
      }
    };
    pump();
  });
}

// ---- helpers ----

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: "127.0.0.1" }, () => resolve(s));
    s.once("error", reject);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mibps = (bytes: number, ms: number): string => (bytes / MiB / (ms / 1000)).toFixed(0);
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function positive(name: string, fallback: number): number {
  const value = Number(args.get(name) ?? fallback);
  if (!(value > 0)) throw new Error(`--${name} must be a number above 0, not ${args.get(name)}`);
  return value;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
