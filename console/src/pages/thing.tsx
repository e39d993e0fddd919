import { useState } from "preact/hooks";
import type { Client } from "../api.js";
import { TimeChart } from "../chart.js";
import { histogram, recentObservations, WINDOWS } from "../find.js";
import { pointOf, shapesOf, type Point } from "../geo.js";
import { TrackMap } from "../map.js";
import type { DmsEvent, ExecutionSummary, JobSummary, Rule, Thing, ThingType } from "../types.js";
import { ErrorBox, Loading, Page, time, useLoad } from "../ui.js";

const NUMERIC = new Set(["long", "double"]);
/** The track draws from at most this many newest positions of the window. */
const TRACK_POINTS = 2000;
/** Open executions are looked up in the newest in-progress jobs only, one request each. */
const JOBS_LOOKED_UP = 25;

function appliesTo(rule: Rule, thing: Thing): boolean {
  const names = rule.filter.thingNames;
  return rule.filter.thingType === thing.thingType && (!names || names.length === 0 || names.includes(thing.thingName));
}

async function openExecutions(client: Client, thingName: string): Promise<ExecutionSummary[]> {
  const jobs = await client.get<JobSummary[]>("/thing-jobs/jobs?status=IN_PROGRESS");
  const found = await Promise.all(
    jobs.slice(0, JOBS_LOOKED_UP).map(async (job) => {
      const res = await client.raw(
        "GET",
        `/thing-jobs/jobs/${encodeURIComponent(job.jobId)}/job-executions?status=IN_PROGRESS`,
      );
      const queued = await client.raw(
        "GET",
        `/thing-jobs/jobs/${encodeURIComponent(job.jobId)}/job-executions?status=QUEUED`,
      );
      const lists = await Promise.all(
        [res, queued].map(async (r) => (r.ok ? ((await r.json()) as ExecutionSummary[]) : [])),
      );
      return lists.flat().filter((e) => e.thingName === thingName);
    }),
  );
  return found.flat();
}

export function ThingPage({ client, thingName }: { client: Client; thingName: string }) {
  const [windowIndex, setWindowIndex] = useState(1);
  const window = WINDOWS[windowIndex]!;
  const base = useLoad(async () => {
    const thing = await client.get<Thing>(`/things/${encodeURIComponent(thingName)}`);
    const [type, rules] = await Promise.all([
      client.get<ThingType>(`/thingtypes/${encodeURIComponent(thing.thingType)}`),
      client.can("Rules", "READ") ? client.get<Rule[]>("/rules") : Promise.resolve([] as Rule[]),
    ]);
    return { thing, type, rules: rules.filter((r) => appliesTo(r, thing)) };
  }, [thingName]);
  const data = useLoad(async () => {
    const type = base.data?.type;
    if (!type) return undefined;
    const numeric = type.resources.filter((r) => NUMERIC.has(r.dataType)).map((r) => r.name);
    const geo = type.resources.find((r) => r.dataType === "geo_point")?.name;
    const [series, positions] = await Promise.all([
      histogram(client, thingName, numeric, window),
      geo ? recentObservations(client, thingName, window.gte, TRACK_POINTS) : Promise.resolve([]),
    ]);
    const track = geo ? positions.map((o) => pointOf(o.state[geo])).filter((p): p is Point => p !== undefined) : [];
    return { series, track };
  }, [base.data, windowIndex]);
  const side = useLoad(async () => {
    const [events, executions] = await Promise.all([
      client.can("Events", "READ")
        ? client
            .get<{ events: DmsEvent[] }>(`/events?thingName=${encodeURIComponent(thingName)}&size=20`)
            .then((a) => a.events)
        : Promise.resolve([] as DmsEvent[]),
      client.can("ThingJobs", "READ") ? openExecutions(client, thingName) : Promise.resolve([] as ExecutionSummary[]),
    ]);
    return { events, executions };
  }, [thingName]);

  const thing = base.data?.thing;
  return (
    <Page title={`Thing ${thingName}`}>
      <ErrorBox error={base.error ?? data.error ?? side.error} />
      {thing && (
        <p class="muted">
          Type {base.data?.type.label} ({thing.thingType}) · domain {thing.domain}
          {thing.serial ? ` · serial ${thing.serial}` : ""}
        </p>
      )}
      <label>
        Window{" "}
        <select name="window" value={windowIndex} onChange={(e) => setWindowIndex(Number(e.currentTarget.value))}>
          {WINDOWS.map((w, i) => (
            <option key={w.label} value={i}>
              {w.label}
            </option>
          ))}
        </select>
      </label>
      <Loading when={data.loading && !data.data} />
      {data.data && (
        <>
          <h2>Resources</h2>
          {data.data.series.values.size === 0 ? (
            <p class="muted">The thing type declares no numeric resource.</p>
          ) : (
            <TimeChart
              label={`Averages per ${window.interval} over ${window.label}`}
              times={data.data.series.times}
              series={[...data.data.series.values].map(([label, values]) => ({ label, values }))}
            />
          )}
          <h2>Track and geofences</h2>
          <TrackMap track={data.data.track} shapes={shapesOf(base.data?.rules ?? [])} />
        </>
      )}
      <div class="columns">
        <div>
          <h2>Open job executions</h2>
          {side.data?.executions.length === 0 && <p class="muted">None.</p>}
          <ul>
            {side.data?.executions.map((e) => (
              <li key={`${e.jobId}/${e.jobExecutionSummary.executionNumber}`}>
                <a href={`#/jobs/${encodeURIComponent(e.jobId)}`}>{e.jobId}</a>: {e.jobExecutionSummary.status}
              </li>
            ))}
          </ul>
        </div>
        <div>
          <h2>Recent events</h2>
          {side.data?.events.length === 0 && <p class="muted">None.</p>}
          <ul>
            {side.data?.events.map((e) => (
              <li key={e.id}>
                <span class={`badge ${e.classification.toLowerCase()}`}>{e.classification}</span> {e.message}{" "}
                <span class="muted">{time(e.time)}</span>
              </li>
            ))}
          </ul>
        </div>
      </div>
    </Page>
  );
}
