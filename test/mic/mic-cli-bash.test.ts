import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PORTAL_HOST, PUBLIC_KEY, startMicDms, type MicDms } from "./support.js";

/**
 * Runs cli-replay.sh: TelenorStartIoT/mic-cli-bash's requests made with curl,
 * its answers read as text. The CLI keeps ApiGatewayRootUrl only up to its
 * second colon, so the stack is published on a port-less URL (as behind a
 * reverse proxy on 80/443); curl's --connect-to stands in for that proxy.
 */
const script = fileURLToPath(new URL("./cli-replay.sh", import.meta.url));
const PUBLIC_HOST = "mic.test";

let t: MicDms;

async function runCli(env: Record<string, string>): Promise<{ code: number; out: Record<string, string> }> {
  const run = promisify(execFile);
  const full = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    MANIFEST_URL: `http://${PUBLIC_HOST}/prod/manifest/?hostname=${PORTAL_HOST}`,
    CONNECT_TO: `${PUBLIC_HOST}:80:127.0.0.1:${t.port}`,
    MIC_USER: "alice",
    MIC_PASSWORD: "alice-pw",
    THING_NAME: "240011234567890",
    THING_TYPE: "10",
    THING_DOMAIN: "acme",
    ...env,
  };
  let stdout: string;
  let code = 0;
  try {
    ({ stdout } = await run("bash", [script], { env: full, timeout: 30_000 }));
  } catch (e) {
    const failed = e as { stdout?: string; code?: number };
    stdout = failed.stdout ?? "";
    code = failed.code ?? 1;
  }
  const out: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return { code, out };
}

beforeAll(async () => {
  t = await startMicDms(() => `http://${PUBLIC_HOST}`);
}, 60_000);
afterAll(async () => t?.close());

describe("mic-cli-bash, its answers read as text", () => {
  it("finds the API root, the API key and the token by grep/awk/sed, then lists and creates things", async () => {
    const { code, out } = await runCli({});
    expect(out.error).toBeUndefined();
    expect(code).toBe(0);
    expect(out.base).toBe(`http://${PUBLIC_HOST}/prod`);
    expect(out.apiKey).toBe(PUBLIC_KEY);
    // The token the text parsing cut out is the one that works.
    const res = await fetch(`${t.url}/demo/user`, { headers: { "x-api-key": PUBLIC_KEY, authorization: out.token! } });
    expect(res.status).toBe(200);
    // The CLI's own List Things body is not JSON: dms says so with a key instead of guessing.
    expect(out.listAsSentKey).toBe("INVALID_ARGUMENTS");
    expect(out.totalThings).toBe("3");
    expect(out.created).toBe("240011234567890");
    expect(out.status).toBe("200");
    expect(t.dms.services.registry.thing("240011234567890")).toMatchObject({ thingType: "10", domain: "acme" });
  });

  it("a wrong password is recognised by its INVALID_LOGIN messageKey", async () => {
    const { code, out } = await runCli({ MIC_PASSWORD: "wrong-password" });
    expect(out.error).toBe("invalid-login");
    expect(code).toBe(1);
  });

  it("without a public client key the metadata manifest has no ApiKey, and the CLI stops there", async () => {
    // Unmark the public key, as a provisioning without one would leave it.
    t.dms.services.db!.prepare("UPDATE api_keys SET public_key = NULL").run();
    const { out } = await runCli({});
    expect(out.error).toBe("short-api-key");
  });
});
