import { useEffect, useRef, useState } from "preact/hooks";
import { TimeChart } from "../chart.js";
import { healthPoint, parseMetrics, type HealthPoint, type Sample } from "../metrics.js";
import { ErrorBox, Page } from "../ui.js";

const EVERY_MS = 3000;
/** Ten minutes of points at one every three seconds. */
const KEPT = 200;

function Small({ title, points, pick }: { title: string; points: HealthPoint[]; pick: (p: HealthPoint) => number }) {
  const last = points[points.length - 1];
  return (
    <div class="tile">
      <h2>{title}</h2>
      <p class="figure">{last ? Math.round(pick(last) * 10) / 10 : "…"}</p>
      <TimeChart
        label={title}
        height={120}
        times={points.map((p) => p.at / 1000)}
        series={[{ label: title, values: points.map(pick) }]}
      />
    </div>
  );
}

export function HealthPage() {
  const [points, setPoints] = useState<HealthPoint[]>([]);
  const [error, setError] = useState<Error | undefined>();
  const previous = useRef<{ samples: Sample[]; at: number } | undefined>(undefined);
  useEffect(() => {
    const scrape = async (): Promise<void> => {
      try {
        const res = await fetch("/metrics");
        const samples = parseMetrics(await res.text());
        const at = Date.now();
        const before = previous.current;
        const point = healthPoint(before?.samples, samples, before ? (at - before.at) / 1000 : 0, at);
        previous.current = { samples, at };
        if (before) setPoints((ps) => [...ps.slice(-(KEPT - 1)), point]);
        setError(undefined);
      } catch (err) {
        setError(err as Error);
      }
    };
    void scrape();
    const timer = setInterval(() => void scrape(), EVERY_MS);
    return () => clearInterval(timer);
  }, []);
  const last = points[points.length - 1];
  return (
    <Page title="Engine health">
      <ErrorBox error={error} />
      <div class="tiles">
        <Small title="Observations/s" points={points} pick={(p) => p.observationsPerSecond} />
        <Small title="Outbox depth" points={points} pick={(p) => p.outboxDepth} />
        <Small title="Oldest waiting action (s)" points={points} pick={(p) => p.outboxOldestSeconds} />
        <Small title="Dead letters per minute" points={points} pick={(p) => p.deadLettersPerMinute} />
      </div>
      <h2>Consumer lag per partition</h2>
      {!last || last.lagByPartition.size === 0 ? (
        <p class="muted">No Kafka consumer in this process.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Topic/partition</th>
              <th scope="col">Lag</th>
            </tr>
          </thead>
          <tbody>
            {[...last.lagByPartition].map(([partition, lag]) => (
              <tr key={partition}>
                <td>{partition}</td>
                <td>{lag}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
