import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/index.js";

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe("configuration from environment variables", () => {
  it("takes the defaults of DESIGN.md when nothing is set", () => {
    const config = loadConfig({});
    expect(config.DMS_HTTP_PORT).toBe(8080);
    expect(config.DMS_DATA_DIR).toBe("./data");
    expect(config.DMS_PUBLIC_URL).toBe("http://localhost:8080");
    expect([...config.roles]).toEqual(["api", "engine", "actions", "proxy", "mqtt", "scheduler", "store"]);
    expect(config.DMS_FIND_COLUMN_CACHE_MB).toBe(320);
  });

  it.each([
    ["DMS_HTTP_PORT", "abc"],
    ["DMS_HTTP_PORT", "70000"],
    ["DMS_ROLES", "api,bogus"],
    ["DMS_PROXY_PORTS", "9-1"],
    ["KAFKA_BROKERS", "a, b"],
    ["DMS_PUBLIC_URL", "not a url"],
    ["DMS_LOG_LEVEL", "loud"],
    ["DMS_FIND_COLUMN_CACHE_MB", "4"],
    ["DMS_DATABASE_URL", "mysql://db.example/dms"],
    ["DMS_DATABASE_URL", "not a url"],
  ])("a bad value of %s (%s) throws one clear line naming the variable", (variable, value) => {
    const error = configError({ [variable]: value });
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
    expect(error.message).toContain(JSON.stringify(value));
    expect(error.message).not.toContain("\n");
  });

  it("takes a postgres:// DMS_DATABASE_URL, and leaves it unset by default", () => {
    const url = "postgres://dms:secret@db.example:5432/dms";
    expect(loadConfig({ DMS_DATABASE_URL: url }).DMS_DATABASE_URL).toBe(url);
    expect(loadConfig({ DMS_DATABASE_URL: "postgresql://db.example/dms" }).DMS_DATABASE_URL).toBe(
      "postgresql://db.example/dms",
    );
    expect(loadConfig({}).DMS_DATABASE_URL).toBeUndefined();
  });

  it.each([
    ["DMS_DATABSE_URL", "DMS_DATABASE_URL"],
    ["DMS_ROLE", "DMS_ROLES"],
    ["DMS_HTTP_PROT", "DMS_HTTP_PORT"],
  ])("an unknown variable %s stops with one line naming it and %s", (variable, nearest) => {
    const error = configError({ [variable]: "postgres://db.example/dms" });
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(`did you mean ${nearest}?`);
    expect(error.message).not.toContain("\n");
  });

  it("leaves variables outside the DMS_ family alone", () => {
    expect(loadConfig({ PATH: "/usr/bin", DATABASE_URL: "x", KAFKA_ONLY: "1" }).DMS_HTTP_PORT).toBe(8080);
  });

  it("npm start with a misspelt variable exits non-zero naming the one it meant", async () => {
    const { code, lines } = await startMain({ DMS_DATABSE_URL: "postgres://127.0.0.1/dms" });
    expect(code).not.toBe(0);
    expect(lines).toEqual([expect.stringContaining("DMS_DATABSE_URL")]);
    expect(lines[0]).toContain("did you mean DMS_DATABASE_URL?");
  });

  it("npm start with a bad variable exits non-zero printing one line", async () => {
    const { code, lines } = await startMain({ DMS_HTTP_PORT: "abc" });
    expect(code).not.toBe(0);
    expect(lines).toEqual([expect.stringContaining("DMS_HTTP_PORT")]);
    expect(lines[0]).toContain("abc");
  });
});

/** Runs `src/main.ts` as `npm start` does, with `env` added to this process's; its exit code and output lines. */
async function startMain(env: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
  const child = spawn("npx", ["tsx", "src/main.ts"], {
    cwd: process.cwd(),
    // npm_config_loglevel silences npm's own warnings about this machine's npmrc: the line checked is dms's.
    env: { ...process.env, ...env, npm_config_loglevel: "error" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, lines: out.trim().split("\n") };
}
