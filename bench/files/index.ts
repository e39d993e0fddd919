/**
 * Files and search benchmark.
 *
 * 1. A 100 MiB file uploaded (PUT) and downloaded (GET) through signed URLs
 *    served by a real dms on loopback, against a plain `fs` stream copy of the
 *    same file on the same disk in the same run.
 * 2. Search queries per second over 100,000 indexed resources (put straight
 *    into the index API, not through REST, to keep the setup short), against a
 *    naive scan of the same entries in a JS array.
 *
 * Run: npx tsx bench/files/index.ts
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { copyFile, stat } from "node:fs/promises";
import { request } from "node:http";
import os from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Principal } from "../../src/auth/index.js";
import { loadConfig } from "../../src/config/index.js";
import type { SearchQuery } from "../../src/search/index.js";
import { startDms, type Dms } from "../../src/service.js";
import type { DataType, ResourceType } from "../../src/things/index.js";
import { writeSection } from "../results.js";

const MIB = 1024 * 1024;
const FILE_MIB = 100;
const ROUNDS = 3;
const RESOURCES = 100_000;
const QUERY_SECONDS = 1.5;
const CONCURRENCY = 4;

const API_KEY = "bench-api-key-0001";

async function main(): Promise<void> {
  const header = [
    `machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}`,
    "command: `npx tsx bench/files/index.ts`",
    // The machine is shared: absolute figures move with its load, the side-by-side ratios much less.
    `load average at start: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(", ")}`,
  ];
  console.log(header.join("\n"));
  // `--only search` or `--only transfer` runs one part (and does not write RESULTS.md).
  const only = process.argv[process.argv.indexOf("--only") + 1];
  const work = mkdtempSync(join(os.tmpdir(), "dms-bench-files-"));
  const dms = await startBenchDms(work);
  let transfer: string[] = [];
  let search: string[] = [];
  try {
    if (only !== "search") transfer = await transferBench(dms, work);
    if (only !== "transfer") search = await searchBench(dms);
  } finally {
    await dms.close();
    rmSync(work, { recursive: true, force: true });
  }
  const section = [
    ...header.map((l) => `${l}  `),
    "",
    `### Transfer of a ${FILE_MIB} MiB file through signed URLs (median of ${ROUNDS})`,
    "",
    "| operation | seconds | MiB/s | ratio to fs stream copy |",
    "|---|---:|---:|---:|",
    ...transfer,
    "",
    `### Search over ${RESOURCES.toLocaleString("en")} indexed resources (+ 111 domains), size 100`,
    "",
    `In-process: \`SearchIndex.search\` called in a loop. REST: \`POST /search\` over loopback, ${CONCURRENCY} requests in flight, client in the same process. Ratio: in-process index against a naive scan of the same entries in a JS array.`,
    "",
    "| query | hits.total | dms index q/s (in-process) | POST /search q/s (REST) | naive array scan q/s | ratio |",
    "|---|---:|---:|---:|---:|---:|",
    ...search,
  ].join("\n");
  console.log(`\n${section}`);
  if (!process.argv.includes("--only")) writeSection("files", `## files\n\n${section}`);
}

// ---------- transfer ----------

async function startBenchDms(work: string): Promise<Dms> {
  const provision = join(work, "provision.json");
  writeFileSync(
    provision,
    JSON.stringify({
      apiKeys: [API_KEY],
      domains: [{ id: "root" }],
      users: [
        {
          userName: "admin",
          password: "admin-pw",
          role: "ReadWrite",
          homeDomain: "root",
          privileges: { root: ["*.*"] },
        },
      ],
    }),
  );
  const config = loadConfig({
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_DATA_DIR: join(work, "data"),
    DMS_PROVISION: provision,
    DMS_LOG_LEVEL: "silent",
    DMS_ROLES: "api",
  });
  return startDms(config);
}

async function transferBench(dms: Dms, work: string): Promise<string[]> {
  const source = join(work, "source.bin");
  writeFileSync(source, randomBytes(FILE_MIB * MIB));
  {
    const token = await login(dms.url!, "admin", "admin-pw");
    const rows: { name: string; seconds: number }[] = [];
    const copyTimes: number[] = [];
    const copyFileTimes: number[] = [];
    const md5Times: number[] = [];
    const upTimes: number[] = [];
    const downTimes: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const copyTarget = join(work, `copy-${round}.bin`);
      copyTimes.push(await timed(() => pipeline(createReadStream(source), createWriteStream(copyTarget))));
      rmSync(copyTarget);
      copyFileTimes.push(await timed(() => copyFile(source, copyTarget)));
      rmSync(copyTarget);
      md5Times.push(await timed(() => pipeline(createReadStream(source), createHash("md5"))));

      const up = await api(dms.url!, token, `/files/upload-url?root=true&fileName=bench/big-${round}.bin`);
      upTimes.push(await timed(() => put(up.url, source)));
      const down = await api(dms.url!, token, `/files/download-url?root=true&fileName=bench/big-${round}.bin`);
      const target = join(work, `down-${round}.bin`);
      downTimes.push(await timed(() => get(down.url, target)));
      if ((await stat(target)).size !== FILE_MIB * MIB) throw new Error("download size mismatch");
      rmSync(target);
    }
    const base = median(copyTimes);
    rows.push({ name: "fs stream copy (createReadStream → createWriteStream)", seconds: base });
    rows.push({ name: "fs.copyFile (kernel copy, for reference)", seconds: median(copyFileTimes) });
    rows.push({ name: "MD5 of the file streamed from disk (the ETag; upload's floor)", seconds: median(md5Times) });
    rows.push({ name: "upload: HTTP PUT to signed URL (stream, MD5, atomic rename)", seconds: median(upTimes) });
    rows.push({ name: "download: HTTP GET of signed URL to a file", seconds: median(downTimes) });
    return rows.map(
      (r) =>
        `| ${r.name} | ${r.seconds.toFixed(3)} | ${(FILE_MIB / r.seconds).toFixed(0)} | ${(base / r.seconds).toFixed(2)} |`,
    );
  }
}

async function login(url: string, userName: string, password: string): Promise<string> {
  const res = await fetch(`${url}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": API_KEY },
    body: JSON.stringify({ userName, password }),
  });
  const body = (await res.json()) as { credentials: { token: string } };
  return body.credentials.token;
}

async function api(url: string, token: string, path: string): Promise<{ url: string }> {
  const res = await fetch(`${url}${path}`, { headers: { authorization: token, "x-api-key": API_KEY } });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { url: string };
}

/** A plain node:http client, so the figure is the server's cost and not fetch's. */
function put(url: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "PUT", headers: { "content-length": FILE_MIB * MIB } }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`PUT ${res.statusCode}`))));
    });
    req.on("error", reject);
    pipeline(createReadStream(file), req).catch(reject);
  });
}

function get(url: string, target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET ${res.statusCode}`));
      pipeline(res, createWriteStream(target)).then(resolve, reject);
    })
      .on("error", reject)
      .end();
  });
}

// ---------- search ----------

const WORDS = [
  "temperature",
  "voltage",
  "ampere",
  "pressure",
  "humidity",
  "latitude",
  "longitude",
  "battery",
  "signal",
  "door",
  "lamp",
  "level",
  "flow",
  "speed",
  "vegetation",
  "vibration",
  "power",
  "energy",
  "status",
  "counter",
];
const DATA_TYPES: DataType[] = ["long", "double", "string", "boolean", "geo_point"];
const RESOURCE_TYPES: ResourceType[] = ["thing", "sub-thing", "virtual"];

async function searchBench(dms: Dms): Promise<string[]> {
  const { identity, search: index } = dms.services;
  // Domains through the identity service: the bus carries them into the index, as in service.
  for (let r = 0; r < 10; r++) {
    await identity.createDomain(`region${r}`, "root", `Region ${WORDS[r]}`);
    for (let s = 0; s < 10; s++)
      await identity.createDomain(`site${r}_${s}`, `region${r}`, `Site ${WORDS[(r + s) % 20]} ${s}`);
  }
  await identity.createUser({
    userName: "regional",
    password: "regional-pw",
    role: "Read",
    homeDomain: "region3",
    privileges: { region3: ["*.*"] },
  });

  const started = performance.now();
  const naive: NaiveEntry[] = identity
    .domains()
    .map((d) => ({ type: "domain", id: d.id, label: d.label, domain: d.id }));
  const types = RESOURCES / 100;
  for (let t = 0; t < types; t++) {
    const domain = `site${t % 10}_${Math.floor(t / 10) % 10}`;
    const resources = Array.from({ length: 100 }, (_, i) => ({
      name: `${WORDS[(t + i) % 20]}_${WORDS[(i * 7) % 20]}_${i}`,
      dataType: DATA_TYPES[i % DATA_TYPES.length]!,
      resourceType: RESOURCE_TYPES[i % RESOURCE_TYPES.length]!,
    }));
    index.putThingType({ id: `tt${t}`, domain, resources });
    for (const r of resources)
      naive.push({
        type: "resource",
        id: `tt${t}/${r.name}`,
        label: r.name,
        domain,
        dataType: r.dataType,
        thingType: `tt${t}`,
      });
  }
  console.log(`indexed ${RESOURCES} resources in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const admin = identity.principal("admin")!;
  const regional = identity.principal("regional")!;
  const tokens = new Map([
    [admin, await login(dms.url!, "admin", "admin-pw")],
    [regional, await login(dms.url!, "regional", "regional-pw")],
  ]);
  const cases: { name: string; principal: Principal; query: SearchQuery }[] = [
    { name: "`te` (prefix of one word)", principal: admin, query: { term: "te" } },
    { name: "`vegetation` (whole word)", principal: admin, query: { term: "vegetation" } },
    { name: "`hum lev` (two prefixes)", principal: admin, query: { term: "hum lev" } },
    { name: "`xyz` (no match)", principal: admin, query: { term: "xyz" } },
    {
      name: "`bat` + filter dataType=long, sort thingType desc",
      principal: admin,
      query: { term: "bat", filter: { dataType: "long" }, sort: { field: "thingType", order: "desc" } },
    },
    { name: "empty term (all), from 5000", principal: admin, query: { term: "", from: 5000 } },
    { name: "`pow` as a user of one region (1/10 visible)", principal: regional, query: { term: "pow" } },
  ];
  const rows: string[] = [];
  for (const c of cases) {
    const total = index.search(c.principal, c.query).hits.total;
    const indexQps = qps(() => index.search(c.principal, c.query));
    const visible = new Set(
      identity
        .domains()
        .filter((d) => c.principal.can("ThingTypes.READ", d.id))
        .map((d) => d.id),
    );
    const naiveQps = qps(() => naiveSearch(naive, visible, c.query));
    const restQps = await httpQps(dms.url!, tokens.get(c.principal)!, c.query);
    rows.push(
      `| ${c.name} | ${total} | ${indexQps.toFixed(0)} | ${restQps.toFixed(0)} | ${naiveQps.toFixed(0)} | ${(indexQps / naiveQps).toFixed(2)} |`,
    );
    console.log(rows[rows.length - 1]);
  }
  return rows;
}

interface NaiveEntry {
  type: "domain" | "resource";
  id: string;
  label: string;
  domain: string;
  dataType?: string;
  thingType?: string;
}

/** What the index replaces: a scan with word-prefix tests, then a sort, over a plain array. */
function naiveSearch(entries: NaiveEntry[], visible: Set<string>, query: SearchQuery): NaiveEntry[] {
  const words = query.term.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const hits = entries.filter((e) => {
    if (!visible.has(e.domain)) return false;
    if (query.filter?.dataType && e.dataType !== query.filter.dataType) return false;
    const own = `${e.label} ${e.id}`.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    return words.every((w) => own.some((o) => o.startsWith(w)));
  });
  hits.sort((a, b) => a.label.localeCompare(b.label));
  const from = query.from ?? 0;
  return hits.slice(from, from + (query.size ?? 100));
}

// ---------- helpers ----------

function qps(run: () => unknown): number {
  for (let i = 0; i < 3; i++) run();
  let n = 0;
  const start = performance.now();
  const end = start + QUERY_SECONDS * 1000;
  while (performance.now() < end) {
    run();
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

/** Requests per second of `POST /search` with CONCURRENCY requests in flight. */
async function httpQps(url: string, token: string, query: SearchQuery): Promise<number> {
  const body = JSON.stringify(query);
  const post = () =>
    fetch(`${url}/search`, {
      method: "POST",
      headers: { authorization: token, "x-api-key": API_KEY, "content-type": "application/json" },
      body,
    });
  const once = async () => {
    // A keep-alive socket the server closed while the in-process figures ran resets once: retry.
    const res = await post().catch(post);
    if (res.status !== 200) throw new Error(`search ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  };
  for (let i = 0; i < 3; i++) await once();
  let n = 0;
  const start = performance.now();
  const end = start + QUERY_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await once();
        n++;
      }
    }),
  );
  return n / ((performance.now() - start) / 1000);
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return (performance.now() - start) / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

await main();
