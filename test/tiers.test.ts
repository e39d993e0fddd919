import { connect } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { LONG, needs, tiers } from "./tiers.js";

const root = join(import.meta.dirname, "..");

describe("the test tiers", () => {
  it("puts every test file in exactly one tier", () => {
    const { fast, slow } = tiers(root);
    expect(fast.length).toBeGreaterThan(0);
    expect(slow.length).toBeGreaterThan(0);
    expect(fast.filter((f) => slow.includes(f))).toEqual([]);
  });

  it("names only test files that exist as taking long", () => {
    expect(Object.keys(LONG).filter((f) => !existsSync(join(root, f)))).toEqual([]);
    expect(tiers(root).slow).toEqual(expect.arrayContaining(Object.keys(LONG)));
  });

  it("finds what a test needs through the support files it imports", () => {
    expect(needs(root, join(root, "test/engine/kafka.test.ts"))).toContain("Kafka");
    expect(needs(root, join(root, "test/rules/store-contract.test.ts"))).toContain("PostgreSQL");
    expect(needs(root, join(root, "test/observations/differential/find-differential.test.ts"))).toContain("OpenSearch");
    expect(needs(root, join(root, "test/patterns/patterns.test.ts"))).toEqual([]);
  });

  it("makes a fast test that starts a process or reaches a slow service fail", async () => {
    // This file is fast, so test/support/fast-guard.ts is set up around it; a module loaded at run
    // time is what the rule cannot see, and what the guard is for.
    const { spawn } = await import("node:child_process");
    expect(() => spawn("true")).toThrow(/slow tier/);
    expect(() => connect({ host: "127.0.0.1", port: 9092 })).toThrow(/Kafka/);
  });
});
