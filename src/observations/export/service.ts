import { randomUUID } from "node:crypto";
import { authorize, requireReadWrite, type Principal } from "../../auth/index.js";
import { ApiError, invalid, notFound } from "../../errors/index.js";
import type { Logger } from "../../observability/index.js";
import type { ThingRegistry } from "../../things/index.js";
import { CronError, parseCron } from "./cron.js";
import type { ExportFiles } from "./files.js";
import type { ExportRunner } from "./runner.js";
import type { ExportStore, StoredJob } from "./store.js";
import type { ExecutionSummary, ExportExecution, ExportJob, ListQuery, PageInfo } from "./types.js";

/** Default page size of the export lists; the interface caps it at 100. */
export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;

const EMAIL = /^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/;
const TIME_PERIOD = /^([1-9]\d{0,4})([dh])$/;

export interface ExportServiceDeps {
  store: ExportStore;
  runner: ExportRunner;
  files: ExportFiles;
  registry: ThingRegistry;
  clock: () => number;
  logger: Logger;
}

/** The export-job operations of the interface, with their validation and ownership rules. */
export class ExportService {
  constructor(private readonly deps: ExportServiceDeps) {}

  async create(principal: Principal, body: Record<string, unknown>): Promise<ExportJob> {
    requireReadWrite(principal);
    authorize(principal, "DataExport.CREATE", principal.homeDomain);
    const jobName = nonEmptyString(body.jobName, "jobName");
    const type = body.type;
    if (type !== "scheduled" && type !== "instant") throw invalid("type", "must be scheduled or instant");
    if (body.thingType !== undefined && body.things !== undefined)
      throw invalid("things", "give thingType or things, not both");
    if (body.thingType === undefined && body.things === undefined)
      throw invalid("thingType", "thingType or things is required");
    const resources = resourceList(body.resources);
    const now = this.nowIso();
    const job: ExportJob = { id: randomUUID(), jobName, type, resources, createdAt: now, updatedAt: now };
    if (body.thingType !== undefined) {
      const id = nonEmptyString(body.thingType, "thingType");
      const thingType = this.deps.registry.thingType(id);
      if (!thingType || !principal.can("ThingTypes.READ", thingType.domain))
        throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "thingType");
      job.thingType = id;
      job.thingTypeLabel = thingType.label;
    } else {
      if (!Array.isArray(body.things) || body.things.length === 0)
        throw invalid("things", "must be a non-empty array of thing names");
      const names = body.things.map((t) => nonEmptyString(t, "things"));
      for (const name of names) {
        const thing = this.deps.registry.thing(name);
        if (!thing || !principal.can("Things.READ", thing.domain))
          throw notFound("THING_NOT_FOUND", `Thing ${name}`, "things");
      }
      job.things = [...new Set(names)];
    }
    if (type === "instant") {
      for (const k of ["schedule", "timePeriod", "enabled"])
        if (body[k] !== undefined) throw invalid(k, "only scheduled jobs have it");
      job.from = isoUtc(body.from, "from");
      job.to = isoUtc(body.to, "to");
      if (Date.parse(job.from) >= Date.parse(job.to)) throw invalid("to", "must be after from");
    } else {
      for (const k of ["from", "to"]) if (body[k] !== undefined) throw invalid(k, "only instant jobs have it");
      job.schedule = schedule(body.schedule);
      job.timePeriod = timePeriod(body.timePeriod);
      job.enabled = body.enabled === undefined ? true : bool(body.enabled, "enabled");
    }
    if (body.notifyByEmail !== undefined) job.notifyByEmail = bool(body.notifyByEmail, "notifyByEmail");
    if (body.recipients !== undefined) job.recipients = recipients(body.recipients);
    if (job.notifyByEmail && !job.recipients) throw invalid("recipients", "required when notifyByEmail is true");
    for (const k of Object.keys(body)) if (!CREATE_KEYS.has(k)) throw invalid(k, "is not a property of an export job");

    await this.deps.store.insertJob(principal.userName, job, this.nextFire(job, this.deps.clock()));
    if (type === "instant") await this.submit(job, principal.userName, Date.parse(job.from!), Date.parse(job.to!));
    return job;
  }

  async get(principal: Principal, id: string): Promise<ExportJob> {
    authorize(principal, "DataExport.READ", principal.homeDomain);
    return (await this.owned(principal, id)).job;
  }

  async list(
    principal: Principal,
    q: ListQuery,
  ): Promise<{ exportJobs: Partial<ExportJob>[]; pageInfo: PageInfo; sortInfo: { order: string } }> {
    authorize(principal, "DataExport.READ", principal.homeDomain);
    const page = await this.deps.store.jobs(principal.userName, q);
    const exportJobs = page.items.map((j) =>
      pick(j, ["id", "jobName", "thingType", "things", "from", "to", "resources", "type"]),
    );
    return { exportJobs, pageInfo: pageInfo(page, q), sortInfo: { order: q.order } };
  }

  async update(principal: Principal, id: string, body: Record<string, unknown>): Promise<ExportJob> {
    requireReadWrite(principal);
    authorize(principal, "DataExport.UPDATE", principal.homeDomain);
    const { job } = await this.owned(principal, id);
    for (const k of Object.keys(body)) if (!UPDATE_KEYS.has(k)) throw invalid(k, "cannot be updated");
    if (job.type !== "scheduled") throw invalid("type", "only scheduled export jobs can be updated");
    const next: ExportJob = { ...job };
    if (body.jobName !== undefined) next.jobName = nonEmptyString(body.jobName, "jobName");
    if (body.enabled !== undefined) next.enabled = bool(body.enabled, "enabled");
    if (body.from !== undefined) next.from = isoUtc(body.from, "from");
    if (body.to !== undefined) next.to = isoUtc(body.to, "to");
    if (body.schedule !== undefined) next.schedule = schedule(body.schedule);
    if (body.timePeriod !== undefined) next.timePeriod = timePeriod(body.timePeriod);
    if (body.resources !== undefined) next.resources = resourceList(body.resources);
    if (body.notifyByEmail !== undefined) next.notifyByEmail = bool(body.notifyByEmail, "notifyByEmail");
    if (body.recipients !== undefined) next.recipients = recipients(body.recipients);
    if (next.notifyByEmail && !next.recipients) throw invalid("recipients", "required when notifyByEmail is true");
    next.updatedAt = this.nowIso();
    await this.deps.store.updateJob(next, this.nextFire(next, this.deps.clock()));
    return next;
  }

  async delete(principal: Principal, id: string): Promise<void> {
    requireReadWrite(principal);
    authorize(principal, "DataExport.DELETE", principal.homeDomain);
    await this.owned(principal, id);
    for (const e of await this.deps.store.executionsOfJob(id)) {
      this.deps.runner.cancel(e.id);
      await this.deps.files.remove(e.id);
    }
    await this.deps.store.deleteJob(id);
  }

  async executions(principal: Principal, jobId: string | undefined, q: ListQuery) {
    authorize(principal, "DataExport.READ", principal.homeDomain);
    if (jobId !== undefined) await this.owned(principal, jobId);
    const page = await this.deps.store.executions(principal.userName, jobId, q);
    const items = page.items.map((e) =>
      jobId === undefined ? { ...summary(e), executionFileName: e.executionFileName } : summary(e),
    );
    return { exportJobExecutions: items, pageInfo: pageInfo(page, q), sortInfo: { order: q.order } };
  }

  execution(principal: Principal, id: string): Promise<ExportExecution> {
    authorize(principal, "DataExport.READ", principal.homeDomain);
    return this.ownedExecution(principal, id);
  }

  async cancel(principal: Principal, id: string): Promise<ExecutionSummary> {
    requireReadWrite(principal);
    authorize(principal, "DataExport.UPDATE", principal.homeDomain);
    const e = await this.ownedExecution(principal, id);
    if (e.status === "CANCELLED") throw new ApiError("INVALID_ACTION", `Export execution ${id} is already cancelled`);
    await this.deps.store.transition(id, "CANCELLED", { completion: this.nowIso() });
    this.deps.runner.cancel(id);
    await this.deps.files.remove(id);
    return summary((await this.deps.store.execution(id))!);
  }

  /** Creates an execution for the window [from, to) and queues it. */
  async submit(job: ExportJob, owner: string, from: number, to: number): Promise<ExportExecution> {
    const e: Omit<ExportExecution, "seq"> = {
      id: randomUUID(),
      jobId: job.id,
      owner,
      status: "QUEUED",
      submissionDateTime: this.nowIso(),
      completionDateTime: "",
      dataScannedInBytes: 0,
      engineExecutionTimeInMillis: 0,
      executionFileName: `${job.jobName}-${fileDate(from)}-${fileDate(to)}.csv`,
      windowFrom: from,
      windowTo: to,
    };
    // Queued in this process's runner, which holds it: no other process's takes it while this one lives.
    await this.deps.store.insertExecution(e, this.deps.runner.claim());
    this.deps.runner.enqueue(e.id);
    return (await this.deps.store.execution(e.id))!;
  }

  /** The next fire after `after` of an enabled scheduled job, else null. */
  nextFire(job: ExportJob, after: number): number | null {
    if (job.type !== "scheduled" || !job.enabled || !job.schedule) return null;
    return parseCron(job.schedule).next(after) ?? null;
  }

  private async owned(principal: Principal, id: string): Promise<StoredJob> {
    const stored = await this.deps.store.job(id);
    if (!stored || stored.owner !== principal.userName)
      throw notFound("EXPORT_JOB_NOT_FOUND", `Export job ${id}`, "id");
    return stored;
  }

  private async ownedExecution(principal: Principal, id: string): Promise<ExportExecution> {
    const e = await this.deps.store.execution(id);
    if (!e || e.owner !== principal.userName)
      throw notFound("EXPORT_EXECUTION_NOT_FOUND", `Export execution ${id}`, "id");
    return e;
  }

  private nowIso(): string {
    return new Date(this.deps.clock()).toISOString();
  }
}

const CREATE_KEYS = new Set([
  "jobName",
  "type",
  "thingType",
  "things",
  "from",
  "to",
  "schedule",
  "timePeriod",
  "resources",
  "enabled",
  "notifyByEmail",
  "recipients",
]);
const UPDATE_KEYS = new Set([
  "jobName",
  "enabled",
  "from",
  "to",
  "schedule",
  "timePeriod",
  "resources",
  "notifyByEmail",
  "recipients",
]);

export function summary(e: ExportExecution): ExecutionSummary {
  return pick(e, [
    "id",
    "jobId",
    "status",
    "submissionDateTime",
    "completionDateTime",
    "dataScannedInBytes",
  ]) as ExecutionSummary;
}

export function executionDetail(e: ExportExecution) {
  return {
    id: e.id,
    jobId: e.jobId,
    status: e.status,
    submissionDateTime: e.submissionDateTime,
    completionDateTime: e.completionDateTime,
    dataScannedInBytes: e.dataScannedInBytes,
    engineExecutionTimeInMillis: e.engineExecutionTimeInMillis,
    executionFileName: e.executionFileName,
  };
}

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<T> {
  const out: Partial<T> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function pageInfo(page: { items: unknown[]; last: number | undefined; hasNext: boolean }, q: ListQuery): PageInfo {
  const info: PageInfo = { itemCount: page.items.length, size: q.size, hasNext: page.hasNext };
  if (q.marker !== undefined) info.marker = String(q.marker);
  if (page.hasNext && page.last !== undefined) info.nextMarker = String(page.last);
  return info;
}

function nonEmptyString(v: unknown, property: string): string {
  if (typeof v !== "string" || v.trim() === "") throw invalid(property, "must be a non-empty string");
  if (v.length > 256) throw invalid(property, "must be at most 256 characters");
  return v;
}

function bool(v: unknown, property: string): boolean {
  if (typeof v !== "boolean") throw invalid(property, "must be a boolean");
  return v;
}

function resourceList(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) throw invalid("resources", "must be an array of at least one resource name");
  return v.map((r) => nonEmptyString(r, "resources"));
}

/** ISO 8601 in UTC (`Z` or `+00:00`), answered with milliseconds. */
function isoUtc(v: unknown, property: string): string {
  if (typeof v !== "string") throw invalid(property, "must be an ISO 8601 timestamp in UTC");
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]00:?00)$/.test(v))
    throw invalid(property, "must be an ISO 8601 timestamp in UTC");
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw invalid(property, "must be an ISO 8601 timestamp in UTC");
  return new Date(t).toISOString();
}

function schedule(v: unknown): string {
  if (typeof v !== "string") throw invalid("schedule", "must be a cron(...) expression");
  try {
    return parseCron(v).expression;
  } catch (err) {
    if (err instanceof CronError) throw invalid("schedule", err.message);
    throw err;
  }
}

function timePeriod(v: unknown): string {
  if (typeof v !== "string" || !TIME_PERIOD.test(v)) throw invalid("timePeriod", "must be <x>d or <x>h");
  return v;
}

export function timePeriodMs(v: string): number {
  const m = TIME_PERIOD.exec(v)!;
  return Number(m[1]) * (m[2] === "d" ? 86_400_000 : 3_600_000);
}

function recipients(v: unknown): string {
  if (typeof v !== "string") throw invalid("recipients", "must be comma-separated e-mail addresses");
  const list = v.split(",").map((r) => r.trim());
  if (list.length === 0 || list.some((r) => !EMAIL.test(r)))
    throw invalid("recipients", "must be comma-separated e-mail addresses");
  return list.join(",");
}

/** `20261120T000000Z`: a date in the file name without characters file systems dislike. */
function fileDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.\d{3}/, "")
    .replace(/[-:]/g, "");
}
