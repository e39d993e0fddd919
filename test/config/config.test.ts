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
    expect([...config.roles]).toEqual(["api", "engine", "actions", "proxy", "mqtt", "scheduler"]);
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
  ])("a bad value of %s (%s) throws one clear line naming the variable", (variable, value) => {
    const error = configError({ [variable]: value });
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
    expect(error.message).toContain(JSON.stringify(value));
    expect(error.message).not.toContain("\n");
  });

  it("npm start with a bad variable exits non-zero printing one line", async () => {
    const child = spawn("npx", ["tsx", "src/main.ts"], {
      cwd: process.cwd(),
      // npm_config_loglevel silences npm's own warnings about this machine's npmrc: the line checked is dms's.
      env: { ...process.env, DMS_HTTP_PORT: "abc", npm_config_loglevel: "error" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).not.toBe(0);
    const lines = out.trim().split("\n");
    expect(lines).toEqual([expect.stringContaining("DMS_HTTP_PORT")]);
    expect(lines[0]).toContain("abc");
  });
});
