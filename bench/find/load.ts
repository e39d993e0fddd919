/**
 * The clients of bench/find's hostile phase, in processes of their own so that
 * their work does not share the measured service's event loop: a sequential
 * `GET /healthz` poller (its latencies are the figure) or N clients that each
 * send the worst FIND requests in turn, one after another.
 * Told what to do by the parent (`process.send`), answers the same way.
 */
interface Job {
  url: string;
  token: string;
  apiKey: string;
  /** Whether this process polls /healthz. */
  poll: boolean;
  hostileClients: number;
  seconds: number;
}

/**
 * The FIND requests, sent once before the phases: sent with each job, their
 * megabyte of JSON would be serialized on the measured service's thread.
 */
export interface Queries {
  queries: readonly unknown[];
}

export interface LoadResult {
  healthzMs: number[];
  statuses: Record<string, number>;
  /** Message fragments of the 400 answers, counted, to show which limit answered. */
  refusals: Record<string, number>;
}

let bodies: string[] = [];

process.on("message", (message: Job | Queries) => {
  if ("queries" in message) {
    bodies = message.queries.map((query) => JSON.stringify({ query }));
    return;
  }
  void run(message).then((result) => process.send!(result));
});

async function run(job: Job): Promise<LoadResult> {
  const until = performance.now() + job.seconds * 1000;
  const healthzMs: number[] = [];
  const statuses: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  const poller = (async () => {
    while (job.poll && performance.now() < until) {
      const start = performance.now();
      const res = await fetch(`${job.url}/healthz`);
      await res.arrayBuffer();
      healthzMs.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const client = async (offset: number): Promise<void> => {
    for (let i = offset; performance.now() < until; i++) {
      const res = await fetch(`${job.url}/observations/find`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": job.apiKey, authorization: job.token },
        body: bodies[i % bodies.length],
      });
      const text = await res.text();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 400) {
        const why = String((JSON.parse(text) as { message?: string }).message).replace(
          /^Property query is invalid: /,
          "",
        );
        const key = why.slice(0, 40);
        refusals[key] = (refusals[key] ?? 0) + 1;
      }
    }
  };
  await Promise.all([poller, ...Array.from({ length: job.hostileClients }, (_, i) => client(i))]);
  return { healthzMs, statuses, refusals };
}
