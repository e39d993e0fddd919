import { useState } from "preact/hooks";
import type { Client } from "../api.js";
import type { JobDetails, JobSummary } from "../types.js";
import { ErrorBox, Loading, Page, time, useLoad } from "../ui.js";

const COUNTERS: [string, string][] = [
  ["numberOfSucceededThings", "succeeded"],
  ["numberOfInProgressThings", "in progress"],
  ["numberOfQueuedThings", "queued"],
  ["numberOfFailedThings", "failed"],
  ["numberOfRejectedThings", "rejected"],
  ["numberOfCanceledThings", "canceled"],
  ["numberOfRemovedThings", "removed"],
];

function list(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function CreateJob({ client, onCreated }: { client: Client; onCreated: (jobId: string) => void }) {
  const [domain, setDomain] = useState(client.session.domainName);
  const [description, setDescription] = useState("");
  const [groups, setGroups] = useState("");
  const [things, setThings] = useState("");
  const [selection, setSelection] = useState("SNAPSHOT");
  const [file, setFile] = useState<File | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const create = async (e: Event): Promise<void> => {
    e.preventDefault();
    try {
      if (!file) throw new Error("Choose a job document");
      const ticket = await client.call<{ documentId: string; signedUrl: string }>("POST", "/thing-jobs/documents", {
        documentName: file.name.slice(0, 64),
        domain,
      });
      const put = await fetch(ticket.signedUrl, {
        method: "PUT",
        headers: { "content-type": file.type || "application/json" },
        body: file,
      });
      if (!put.ok) throw new Error(`Upload of the document failed: ${put.status} ${await put.text()}`);
      const job = await client.call<{ jobId: string }>("POST", "/thing-jobs/jobs", {
        domain,
        description,
        jobDocumentId: ticket.documentId,
        targets: {
          ...(list(groups).length ? { groups: list(groups) } : {}),
          ...(list(things).length ? { things: list(things) } : {}),
        },
        targetSelection: selection,
      });
      setError(undefined);
      onCreated(job.jobId);
    } catch (err) {
      setError(err as Error);
    }
  };
  return (
    <form class="job-form" onSubmit={create}>
      <h2>New job</h2>
      <label>
        Job document{" "}
        <input
          type="file"
          name="document"
          accept="application/json,.json"
          onChange={(e) => setFile(e.currentTarget.files?.[0])}
        />
      </label>
      <label>
        Domain <input name="domain" value={domain} onInput={(e) => setDomain(e.currentTarget.value)} />
      </label>
      <label>
        Description{" "}
        <input name="description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <label>
        Thing groups (comma-separated){" "}
        <input name="groups" value={groups} onInput={(e) => setGroups(e.currentTarget.value)} />
      </label>
      <label>
        Things (comma-separated){" "}
        <input name="things" value={things} onInput={(e) => setThings(e.currentTarget.value)} />
      </label>
      <label>
        Target selection{" "}
        <select name="targetSelection" value={selection} onChange={(e) => setSelection(e.currentTarget.value)}>
          <option value="SNAPSHOT">SNAPSHOT</option>
          <option value="CONTINUOUS">CONTINUOUS</option>
        </select>
      </label>
      <button type="submit">Create job</button>
      <ErrorBox error={error} />
    </form>
  );
}

export function JobsPage({ client }: { client: Client }) {
  const jobs = useLoad(() => client.get<JobSummary[]>("/thing-jobs/jobs"), []);
  return (
    <Page title="Thing jobs">
      <ErrorBox error={jobs.error} />
      <Loading when={jobs.loading && !jobs.data} />
      <table>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Status</th>
            <th scope="col">Selection</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {(jobs.data ?? []).map((j) => (
            <tr key={j.jobId}>
              <td>
                <a href={`#/jobs/${encodeURIComponent(j.jobId)}`}>{j.jobId}</a>
              </td>
              <td>{j.status}</td>
              <td>{j.targetSelection}</td>
              <td>{time(j.lastUpdatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {client.can("ThingJobs", "CREATE") && (
        <CreateJob client={client} onCreated={(id) => (location.hash = `#/jobs/${encodeURIComponent(id)}`)} />
      )}
    </Page>
  );
}

export function JobPage({ client, jobId }: { client: Client; jobId: string }) {
  const job = useLoad(() => client.get<JobDetails>(`/thing-jobs/jobs/${encodeURIComponent(jobId)}`), [jobId]);
  const [error, setError] = useState<Error | undefined>();
  const cancel = async (): Promise<void> => {
    try {
      await client.call("PATCH", `/thing-jobs/jobs/${encodeURIComponent(jobId)}`, {
        comment: "canceled from the console",
      });
      setError(undefined);
      job.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  const details = job.data?.jobProcessDetails ?? {};
  const counts = COUNTERS.map(([key, label]) => ({ label, n: Number(details[key] ?? 0) }));
  const total = counts.reduce((s, c) => s + c.n, 0);
  return (
    <Page
      title={`Job ${jobId}`}
      actions={
        job.data?.status === "IN_PROGRESS" &&
        client.can("ThingJobs", "UPDATE") && (
          <button type="button" onClick={() => void cancel()}>
            Cancel job
          </button>
        )
      }
    >
      <ErrorBox error={job.error ?? error} />
      {job.data && (
        <>
          <p>
            {job.data.description} · <strong>{job.data.status}</strong> · {job.data.targetSelection}
          </p>
          <p class="muted">Targets: {[...job.data.targets.groups, ...job.data.targets.things].join(", ")}</p>
          <h2>Rollout</h2>
          <div class="progress" role="img" aria-label={counts.map((c) => `${c.n} ${c.label}`).join(", ")}>
            {counts
              .filter((c) => c.n > 0)
              .map((c) => (
                <span key={c.label} class={`seg ${c.label.replace(" ", "-")}`} style={{ flexGrow: c.n }}>
                  {c.n} {c.label}
                </span>
              ))}
            {total === 0 && <span class="muted">No executions yet.</span>}
          </div>
        </>
      )}
    </Page>
  );
}
