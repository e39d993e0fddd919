import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { until } from "../support/wait.js";

/**
 * The operator's console in a real browser (Debian's Chromium driven by playwright-core) against a
 * real dms: it must work through the public REST interface alone, as its users' privileges allow.
 */
const CHROMIUM = process.env.DMS_TEST_CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = join(process.cwd(), "test-artifacts", "console");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let t: TestDms;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set DMS_TEST_CHROMIUM)`);
  mkdirSync(SHOTS, { recursive: true });
  t = await startTestDms({
    // The public key is what the sign-in page reads from /metadata/manifest.
    provision: { ...BASE_PROVISION, apiKeys: [{ key: API_KEY, public: true }] },
    env: { DMS_ROLES: "api,engine,actions" },
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function signIn(user: string, password: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${t.url}/console`);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Sections" }).waitFor();
  return page;
}

/** axe-core on the page as it stands: no serious or critical violation. */
async function accessible(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: { id: string; impact: string; help: string }[] }> };
      }
    ).axe;
    const result = await axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help }));
  });
  expect(
    violations.filter((v) => v.impact === "serious" || v.impact === "critical"),
    name,
  ).toEqual([]);
}

async function send(observations: unknown[]): Promise<void> {
  const res = await t.call("POST", "/observations", { user: "admin", body: observations });
  const answer = (await res.json()) as { accepted: number };
  expect(answer.accepted, JSON.stringify(answer)).toBe(observations.length);
}

async function stored(thingName: string, atLeast: number): Promise<void> {
  await until(
    async () => {
      const res = await t.call("POST", "/observations/find", {
        user: "alice",
        body: {
          query: {
            size: 0,
            query: { bool: { filter: [{ range: { timestamp: { gte: "now-1d" } } }, { term: { thingName } }] } },
          },
        },
      });
      const body = (await res.json()) as { hits?: { total: number } };
      return (body.hits?.total ?? 0) >= atLeast;
    },
    20_000,
    `${atLeast} observations of ${thingName} stored`,
    100,
  );
}

describe("the operator's console", { timeout: 90_000 }, () => {
  it("signs in, finds a thing and draws its chart and track from observations sent", async () => {
    const now = Date.now();
    await send(
      Array.from({ length: 30 }, (_, i) => ({
        thingName: "t1",
        timestamp: now - (30 - i) * 60_000,
        state: { temp: 20 + (i % 7), latlng: `${59.9 + i * 0.001},${10.7 + i * 0.002}` },
      })),
    );
    await stored("t1", 30);
    const page = await signIn("alice", "alice-pw");
    await page.getByRole("heading", { name: "Things" }).waitFor();
    // Silent first: t2 has sent nothing, so it comes before t1.
    const names = await page.locator("tbody tr td:first-child").allInnerTexts();
    expect(names.indexOf("t2")).toBeLessThan(names.indexOf("t1"));
    await accessible(page, "things");
    await page.getByLabel("Thing name starts with").fill("t1");
    await expect.poll(() => page.locator("tbody tr").count()).toBe(1);
    await page.getByRole("link", { name: "t1" }).click();
    await page.getByRole("heading", { name: "Thing t1" }).waitFor();
    const chart = page.locator(".chart[data-points]").first();
    await chart.waitFor();
    expect(Number(await chart.getAttribute("data-points"))).toBeGreaterThan(1);
    expect(await chart.locator("canvas").count()).toBeGreaterThan(0);
    await expect.poll(() => page.locator("svg.map polyline.track").count()).toBe(1);
    await accessible(page, "thing");
    await page.close();
  });

  it("shows a rule's mistake at its field, saves it fixed, and the rule fires an event to acknowledge", async () => {
    const page = await signIn("alice", "alice-pw");
    await page.goto(`${t.url}/console#/rules/new`);
    await page.getByLabel("Name", { exact: true }).fill("console hot");
    await page.getByLabel("Category").fill("not allowed!");
    await page.getByLabel("Domain").fill("acme");
    await page.getByLabel("Thing type").fill("10");
    await page.getByRole("button", { name: "Save" }).click();
    const categoryError = page.locator("#rule-category-error");
    await categoryError.waitFor();
    expect(await page.locator("#rule-category").getAttribute("aria-invalid")).toBe("true");
    await accessible(page, "rule-error");
    await page.getByLabel("Category").fill("heat.alarm");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved rule" }).waitFor();
    expect(await categoryError.count()).toBe(0);

    await send([{ thingName: "t1", timestamp: Date.now(), state: { temp: 45 } }]);
    await page.getByRole("link", { name: "Events" }).click();
    await page.getByRole("heading", { name: "Events" }).waitFor();
    await expect
      .poll(
        async () => {
          await page.getByLabel("Acknowledged").selectOption("");
          await page.getByLabel("Acknowledged").selectOption("false");
          return page.getByRole("button", { name: "Acknowledge" }).count();
        },
        { timeout: 20_000 },
      )
      .toBeGreaterThan(0);
    await accessible(page, "events");
    await page.getByRole("button", { name: "Acknowledge" }).first().click();
    await page.getByLabel("Acknowledged").selectOption("true");
    await page.locator("tbody tr", { hasText: "t1 is hot" }).first().waitFor();
    await page.getByRole("link", { name: "Rules" }).click();
    await page.getByRole("heading", { name: "Rules" }).waitFor();
    await accessible(page, "rules");
    await page.getByRole("link", { name: "Health" }).click();
    await page.locator(".tile").first().waitFor();
    await accessible(page, "health");
    await page.close();
  });

  it("shows a Read user no write control", async () => {
    const page = await signIn("reader", "reader-pw");
    await page.getByRole("link", { name: "Rules" }).click();
    await page.getByRole("heading", { name: "Rules" }).waitFor();
    await page.locator("tbody tr").first().waitFor();
    expect(await page.getByRole("link", { name: "New rule" }).count()).toBe(0);
    expect(await page.locator("tbody input[type=checkbox]").count()).toBe(0);
    await page.getByRole("link", { name: "Events" }).click();
    await page.locator("tbody tr").first().waitFor();
    expect(await page.getByRole("button", { name: "Acknowledge" }).count()).toBe(0);
    await page.getByRole("link", { name: "Jobs" }).click();
    await page.getByRole("heading", { name: "Thing jobs" }).waitFor();
    expect(await page.getByRole("button", { name: "Create job" }).count()).toBe(0);
    await accessible(page, "jobs-read-only");
    await page.close();
  });
});
