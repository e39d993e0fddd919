/**
 * Polls `check` (real time) until it holds, for effects of asynchronous work:
 * deliveries, consumers, brokers. Throws naming `what` when `timeoutMs` passes.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = "condition",
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
