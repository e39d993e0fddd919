import { createServer } from "node:net";

/** `count` consecutive ports nobody listens on, from a random place among the high ports. */
export async function freePortRange(count: number): Promise<{ first: number; last: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Below the system's ephemeral range (32768+), so outgoing connections do not land on them.
    const first = 20_000 + Math.floor(Math.random() * 12_000);
    let free = true;
    for (let p = first; p < first + count && free; p++) free = await isFree(p);
    if (free) return { first, last: first + count - 1 };
  }
  throw new Error("no free port range");
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen({ port }, () => s.close(() => resolve(true)));
  });
}
