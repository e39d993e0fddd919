import { describe, expect, it } from "vitest";
import { ProbedCondition, Readiness } from "../../src/readiness/index.js";
import { until } from "../support/wait.js";

describe("a probed readiness condition", () => {
  it("is met while the probe answers, names why not while it fails or hangs, and never asks twice at once", async () => {
    const readiness = new Readiness();
    let answer: "ok" | "fail" | "hang" = "ok";
    let asked = 0;
    let inFlight = 0;
    let mostAtOnce = 0;
    const changes: (string | undefined)[] = [];
    const hung: (() => void)[] = [];
    const probe = new ProbedCondition(readiness, {
      name: "database",
      everyMs: 20,
      timeoutMs: 50,
      probe: async () => {
        asked++;
        mostAtOnce = Math.max(mostAtOnce, ++inFlight);
        try {
          if (answer === "fail") throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
          if (answer === "hang") await new Promise<void>((resolve) => hung.push(resolve));
        } finally {
          inFlight--;
        }
      },
      onChange: (err) => changes.push(err?.message),
    });
    const condition = () => readiness.status().conditions.find((c) => c.name === "database");

    await probe.start();
    expect(condition()).toEqual({ name: "database", ready: true });

    answer = "fail";
    await until(() => condition()?.ready === false, 2000, "the failure seen");
    expect(condition()?.detail).toBe("unreachable: connect ECONNREFUSED 127.0.0.1:5432");

    answer = "hang";
    await until(() => /no answer/.test(condition()?.detail ?? ""), 2000, "the hang seen");
    const askedWhileHanging = asked;
    await new Promise((r) => setTimeout(r, 200));
    // Ten periods passed: the hanging probe was not asked again beside itself.
    expect(asked).toBe(askedWhileHanging);
    expect(mostAtOnce).toBe(1);

    answer = "ok";
    for (const resolve of hung.splice(0)) resolve();
    await until(() => condition()?.ready === true, 2000, "met again");
    await probe.stop();
    // Told once when it was lost and once when it came back, not at every probe.
    expect(changes).toEqual(["connect ECONNREFUSED 127.0.0.1:5432", undefined]);
  });
});
