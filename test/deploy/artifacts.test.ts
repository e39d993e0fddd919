import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig, type Config } from "../../src/config/index.js";

const root = join(import.meta.dirname, "..", "..");
const read = (path: string): string => readFileSync(join(root, path), "utf8");

/** The optional secret examples/cluster/env.example offers, as an operator would fill it in. */
const DOT_ENV: Record<string, string> = { JWT_SECRET: "a-jwt-secret-of-32-characters-ok" };

interface ComposeService {
  image?: string;
  build?: string;
  environment?: Record<string, string | number>;
  command?: unknown;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  profiles?: string[];
}

/** Compose's interpolation: `${NAME:-default}`, `${NAME:?error}`, `${NAME}`, `$$` for a dollar. */
function interpolate(value: string, dotEnv: Record<string, string>): string {
  return value.replace(/\$\$|\$\{(\w+)(?::([-?])([^}]*))?\}/g, (whole, name?: string, kind?: string, rest?: string) => {
    if (name === undefined) return "$";
    const set = dotEnv[name];
    if (set) return set;
    if (kind === "-") return rest ?? "";
    throw new Error(`${whole}: ${name} is not set`);
  });
}

function composeFile(): Record<string, ComposeService> {
  const file = parse(read("examples/cluster/docker-compose.yml"), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  return file.services;
}

/** A service's environment after interpolation, as its container sees it. */
function environment(service: ComposeService, dotEnv = DOT_ENV): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), dotEnv)]),
  );
}

/** Every host port a service publishes ("3001:8080", "127.0.0.1:19092:19092", "40000-40049:40000-40049"). */
function hostPorts(service: ComposeService): number[] {
  return (service.ports ?? []).flatMap((mapping) => {
    const parts = mapping.split(":");
    const [first, last = first] = parts[parts.length - 2]!.split("-").map(Number) as [number, number?];
    return Array.from({ length: last - first + 1 }, (_, k) => first + k);
  });
}

/** KEY=value lines, as systemd's EnvironmentFile reads them (comments and blank lines skipped). */
function environmentFile(path: string): Record<string, string> {
  const lines = read(path)
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"));
  return Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
}

/** The instructions of the Dockerfile's last stage (after its last FROM), continuation lines joined. */
function dockerfile(): { froms: string[]; instructions: string[]; runtime: string[] } {
  const instructions = read("Dockerfile")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const froms = instructions.filter((line) => line.startsWith("FROM "));
  const lastFrom = instructions.lastIndexOf(froms[froms.length - 1]!);
  return { froms, instructions, runtime: instructions.slice(lastFrom) };
}

describe("examples/cluster/docker-compose.yml", () => {
  const services = composeFile();
  const nodes = Object.entries(services).filter(([name]) => name.startsWith("dms-"));

  it("runs three dms nodes built from the repository's Dockerfile", () => {
    expect(nodes.map(([name]) => name)).toEqual(["dms-1", "dms-2", "dms-3"]);
    for (const [, node] of nodes) expect(node.build).toBe("../..");
  });

  it("publishes no host port twice, across every service", () => {
    const ports = Object.values(services).flatMap(hostPorts);
    expect(ports.length).toBeGreaterThan(0);
    expect(new Set(ports).size).toBe(ports.length);
  });

  it("gives each node a data volume of its own: the nodes share no files", () => {
    const volumes = nodes.map(([, node]) => node.volumes ?? []);
    for (const own of volumes) expect(own).toHaveLength(1);
    expect(new Set(volumes.flat().map((v) => v.split(":")[0])).size).toBe(nodes.length);
  });

  it("points every node at the postgres and kafka services, started and healthy first", () => {
    const postgres = environment(services.postgres!);
    const kafkaListeners = environment(services.kafka!).KAFKA_ADVERTISED_LISTENERS!;
    for (const [, node] of nodes) {
      const env = environment(node);
      const db = new URL(env.DMS_DATABASE_URL!);
      expect([db.hostname, db.port, db.username, db.password, db.pathname]).toEqual([
        "postgres",
        "5432",
        postgres.POSTGRES_USER,
        postgres.POSTGRES_PASSWORD,
        `/${postgres.POSTGRES_DB}`,
      ]);
      for (const broker of env.KAFKA_BROKERS!.split(",")) expect(kafkaListeners).toContain(`://${broker}`);
      expect(node.depends_on).toEqual({
        postgres: { condition: "service_healthy" },
        kafka: { condition: "service_healthy" },
      });
    }
    expect(services.postgres!.healthcheck?.test.length).toBeGreaterThan(0);
    expect(services.kafka!.healthcheck?.test.length).toBeGreaterThan(0);
  });

  it("gives each node an environment dms accepts, with the same secret, and proxy ports published as they are", () => {
    const configs = nodes.map(([, node]): [ComposeService, Config] => [node, loadConfig(environment(node))]);
    for (const [node, config] of configs) {
      const { first, last } = config.DMS_PROXY_PORTS;
      expect(node.ports).toContain(`${first}-${last}:${first}-${last}`);
      expect(node.ports).toContain(`${new URL(config.DMS_PUBLIC_URL).port}:${config.DMS_HTTP_PORT}`);
    }
    expect(new Set(configs.map(([, c]) => c.DMS_JWT_SECRET)).size).toBe(1);
    expect(configs[0]![1].DMS_JWT_SECRET).toBe(DOT_ENV.JWT_SECRET);
  });

  it("starts without any secret of the operator's: every node then reads the keys the database holds", () => {
    for (const [, node] of nodes) {
      const config = loadConfig(environment(node, {}));
      expect(config.DMS_JWT_SECRET).toBeUndefined();
      expect(config.DMS_DATABASE_URL).toMatch(/^postgres:\/\//);
      // The image's own command: nothing is copied into the data dir before dms starts.
      expect(node.command).toBeUndefined();
    }
    const env = read("examples/cluster/env.example");
    expect(env).toMatch(/^JWT_SECRET=$/m);
    expect(env).not.toMatch(/DEVICE_SECRET_KEY|device-secret-key/);
  });
});

describe("Dockerfile", () => {
  const { froms, instructions, runtime } = dockerfile();

  it("builds in one stage and runs from another, as the unprivileged node user", () => {
    expect(froms.length).toBeGreaterThanOrEqual(2);
    expect(froms[0]).toMatch(/^FROM node:20\S* AS build$/);
    expect(froms[froms.length - 1]).toMatch(/^FROM node:20\S*$/);
    expect(runtime).toContain("USER node");
  });

  it("runs what npm run start:built runs, checks /healthz, and exposes every default port of src/config", () => {
    const startBuilt = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts[
      "start:built"
    ]!;
    const cmd = runtime.find((line) => line.startsWith("CMD "))!;
    expect((JSON.parse(cmd.slice(4)) as string[]).join(" ")).toBe(startBuilt);
    expect(runtime.find((line) => line.startsWith("HEALTHCHECK "))).toMatch(/\/healthz/);

    const defaults = loadConfig({});
    const exposed = runtime
      .find((line) => line.startsWith("EXPOSE "))!
      .split(/\s+/)
      .slice(1);
    const { first, last } = defaults.DMS_PROXY_PORTS;
    expect(exposed.sort()).toEqual(
      [
        defaults.DMS_HTTP_PORT,
        defaults.DMS_PROXY_CONTROL_PORT,
        defaults.DMS_MQTT_PORT,
        defaults.DMS_PROXY_DEVICE_PORT,
        `${first}-${last}`,
      ]
        .map(String)
        .sort(),
    );
  });

  it("copies from the build context only what .dockerignore lets in", () => {
    const allowed = read(".dockerignore")
      .split("\n")
      .filter((line) => line.startsWith("!"))
      .map((line) => line.slice(1).replace(/\/$/, ""));
    const sources = instructions
      .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
      .flatMap((line) => line.split(/\s+/).slice(1, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(allowed, source).toContain(source);
  });
});

describe("examples/cluster/systemd", () => {
  const env = environmentFile("examples/cluster/systemd/dms.env");
  const unit = read("examples/cluster/systemd/dms.service");
  const settings = (key: string): string[] =>
    unit
      .split("\n")
      .filter((line) => line.startsWith(`${key}=`))
      .map((line) => line.slice(key.length + 1));

  it("dms.env is an environment dms accepts as it is, its optional secret empty or filled in", () => {
    expect(env.DMS_JWT_SECRET).toBe("");
    const config = loadConfig(env);
    expect(config.DMS_JWT_SECRET).toBeUndefined();
    expect(config.DMS_DATABASE_URL).toMatch(/^postgres:\/\//);
    expect(config.KAFKA_BROKERS).toBeDefined();
    expect(loadConfig({ ...env, DMS_JWT_SECRET: DOT_ENV.JWT_SECRET! }).DMS_JWT_SECRET).toBe(DOT_ENV.JWT_SECRET);
  });

  it("dms.service runs node on the build as user dms, restarts on failure, stops on SIGTERM, and writes only its data dir", () => {
    expect(settings("Type")).toEqual(["simple"]);
    expect(settings("User")).toEqual(["dms"]);
    expect(settings("EnvironmentFile")).toEqual(["/etc/dms/dms.env"]);
    expect(settings("ExecStart")).toEqual(["/usr/bin/node /opt/dms/dist/main.js"]);
    // Nothing to check or copy before the start: the keys are in the database.
    expect(settings("ExecStartPre")).toEqual([]);
    expect(settings("Restart")).toEqual(["on-failure"]);
    expect(settings("KillSignal")).toEqual(["SIGTERM"]);
    expect(settings("TimeoutStopSec")).toHaveLength(1);
    expect(settings("NoNewPrivileges")).toEqual(["yes"]);
    expect(settings("ProtectSystem")).toEqual(["strict"]);
    expect(settings("ReadWritePaths")).toEqual([env.DMS_DATA_DIR]);
  });
});

describe("thread entries under src/", () => {
  /** Every .mjs file under src/, relative to the repository. */
  function entries(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? entries(join(dir, e.name)) : e.name.endsWith(".mjs") ? [relative(root, join(dir, e.name))] : [],
    );
  }

  it("load their code through load-thread.mjs, so that node dist/main.js (the image) runs the compiled thread", () => {
    const threads = entries(join(root, "src")).filter((file) => file !== "src/load-thread.mjs");
    expect(threads.length).toBeGreaterThan(0);
    for (const file of threads) {
      const source = read(file);
      expect(source, file).toMatch(/from "(\.\.?\/)+load-thread\.mjs"/);
      expect(source, file).not.toMatch(/tsx\/esm\/api/);
    }
  });
});
