import { LRUCache } from "lru-cache";
import type { ThingJobs } from "./jobs.js";
import type { StoredExecution } from "./store.js";
import { DEVICE_STATUSES, TERMINAL, type DeviceStatus } from "./types.js";

/** An MQTT message to publish: `topic` is complete, `payload` is JSON-serialised by the bridge. */
export interface DeviceMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/** The error codes of AWS IoT Jobs' device API. */
export type DeviceErrorCode =
  | "InvalidTopic"
  | "InvalidJson"
  | "InvalidRequest"
  | "InvalidStateTransition"
  | "ResourceNotFound"
  | "VersionMismatch"
  | "InternalError"
  | "TerminalStateReached";

class DeviceError extends Error {
  constructor(
    readonly code: DeviceErrorCode,
    message: string,
    readonly executionState?: Record<string, unknown>,
  ) {
    super(message);
  }
}

const MAX_STEP_MINUTES = 10080;
const DOC_CACHE = 1000;
const NOTIFIED_CACHE = 100_000;

/**
 * The device side of thing jobs over MQTT (AWS IoT Jobs topics under
 * `things/{thingName}/jobs/`): answers requests and builds `notify` and
 * `notify-next` messages. Transport-free: the bridge hands it topic and
 * bytes and publishes what it returns.
 */
export class DeviceJobs {
  /** Job documents never change once uploaded, so a parsed copy can be reused. */
  private readonly docs = new LRUCache<string, { document: unknown }>({ max: DOC_CACHE });
  /**
   * What was last notified per thing, to send only changes. Bounded: a thing evicted here gets
   * one repeated notification, which devices must tolerate anyway (MQTT is at-least-once).
   */
  private readonly lastNotify = new LRUCache<string, string>({ max: NOTIFIED_CACHE });
  private readonly lastNext = new LRUCache<string, string>({ max: NOTIFIED_CACHE });
  /** Each device's requests under way, answered in the order they came: an update is seen by the get after it. */
  private readonly lanes = new Map<string, Promise<unknown>>();

  constructor(private readonly jobs: ThingJobs) {}

  /** Answers one request published by `thingName` on `things/{thingName}/jobs/{suffix}`, after the device's earlier ones. */
  handle(thingName: string, suffix: string, payload: Buffer): Promise<DeviceMessage[]> {
    const run = (this.lanes.get(thingName) ?? Promise.resolve()).then(() =>
      this.answerRequest(thingName, suffix, payload),
    );
    const lane = run.catch(() => undefined);
    this.lanes.set(thingName, lane);
    void lane.then(() => {
      if (this.lanes.get(thingName) === lane) this.lanes.delete(thingName);
    });
    return run;
  }

  private async answerRequest(thingName: string, suffix: string, payload: Buffer): Promise<DeviceMessage[]> {
    const base = `things/${thingName}/jobs/${suffix}`;
    if (/(^|\/)(accepted|rejected)$/.test(suffix) || suffix === "notify" || suffix === "notify-next") return [];
    let clientToken: string | undefined;
    const now = this.jobs.now();
    try {
      const request = parse(payload);
      clientToken = typeof request.clientToken === "string" ? request.clientToken : undefined;
      const answer = await this.answer(thingName, suffix, request, now);
      return [{ topic: `${base}/accepted`, payload: withToken({ ...answer, timestamp: now }, clientToken) }];
    } catch (err) {
      const e =
        err instanceof DeviceError ? err : new DeviceError("InternalError", "The request could not be processed");
      const body: Record<string, unknown> = { code: e.code, message: e.message, timestamp: now };
      if (e.executionState) body.executionState = e.executionState;
      return [{ topic: `${base}/rejected`, payload: withToken(body, clientToken) }];
    }
  }

  /** `notify` and `notify-next` for a thing whose pending executions changed; only what changed is sent. */
  async notifications(thingName: string): Promise<DeviceMessage[]> {
    const now = this.jobs.now();
    const pending = await this.jobs.pending(thingName);
    const out: DeviceMessage[] = [];
    const listKey = pending.map((r) => `${r.jobId}:${r.executionNumber}:${r.status}`).join(",");
    if (this.lastNotify.get(thingName) !== listKey) {
      this.lastNotify.set(thingName, listKey);
      const jobs: Record<string, unknown[]> = {};
      for (const r of pending) (jobs[r.status] ??= []).push(summary(r));
      out.push({ topic: `things/${thingName}/jobs/notify`, payload: { timestamp: now, jobs } });
    }
    const next = pending[0];
    const nextKey = next ? `${next.jobId}:${next.executionNumber}:${next.status}` : "";
    if (this.lastNext.get(thingName) !== nextKey) {
      this.lastNext.set(thingName, nextKey);
      const payload: Record<string, unknown> = { timestamp: now };
      if (next) payload.execution = await this.execution(next, true);
      out.push({ topic: `things/${thingName}/jobs/notify-next`, payload });
    }
    return out;
  }

  private async answer(
    thingName: string,
    suffix: string,
    req: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>> {
    if (suffix === "get") {
      const pending = await this.jobs.pending(thingName);
      return {
        inProgressJobs: pending.filter((r) => r.status === "IN_PROGRESS").map(summary),
        queuedJobs: pending.filter((r) => r.status === "QUEUED").map(summary),
      };
    }
    if (suffix === "start-next") return this.startNext(thingName, req, now);
    const match = /^([^/]+)\/(get|update)$/.exec(suffix);
    if (!match) throw new DeviceError("InvalidTopic", `Unknown jobs topic ${suffix}`);
    const [, jobId, verb] = match as unknown as [string, string, "get" | "update"];
    if (verb === "get") {
      if (jobId === "$next") {
        const next = (await this.jobs.pending(thingName))[0];
        return next ? { execution: await this.execution(next, req.includeJobDocument !== false) } : {};
      }
      const row = await this.visible(jobId, thingName, req);
      if (!row) throw new DeviceError("ResourceNotFound", `No execution of job ${jobId} on thing ${thingName}`);
      return { execution: await this.execution(row, req.includeJobDocument !== false) };
    }
    return this.update(thingName, jobId, req, now);
  }

  private async startNext(
    thingName: string,
    req: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>> {
    const statusDetails = details(req.statusDetails);
    const stepTimeoutInMinutes = stepTimeout(req.stepTimeoutInMinutes);
    let row = (await this.jobs.pending(thingName))[0];
    if (!row) return {};
    if (row.status === "QUEUED") {
      const queued = row;
      row = await this.jobs.mutate(() =>
        this.jobs.transition(queued, "IN_PROGRESS", now, { statusDetails, stepTimeoutInMinutes, byDevice: true }),
      );
    }
    return { execution: await this.execution(row, true) };
  }

  private async update(
    thingName: string,
    jobId: string,
    req: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>> {
    if (req.status === undefined) throw new DeviceError("InvalidRequest", "status is required");
    if (!DEVICE_STATUSES.includes(req.status as DeviceStatus)) {
      throw new DeviceError("InvalidRequest", `status must be one of ${DEVICE_STATUSES.join(", ")}`);
    }
    const status = req.status as DeviceStatus;
    const statusDetails = details(req.statusDetails);
    const stepTimeoutInMinutes = stepTimeout(req.stepTimeoutInMinutes);
    const expectedVersion = optionalInt(req.expectedVersion, "expectedVersion");
    const row = await this.visible(jobId, thingName, req);
    if (!row) throw new DeviceError("ResourceNotFound", `No execution of job ${jobId} on thing ${thingName}`);
    if (TERMINAL.has(row.status)) {
      throw new DeviceError("TerminalStateReached", `The execution is already ${row.status}`, state(row));
    }
    if (expectedVersion !== undefined && expectedVersion !== row.versionNumber) {
      throw new DeviceError("VersionMismatch", `The execution is at version ${row.versionNumber}`, state(row));
    }
    const updated = await this.jobs.mutate(() =>
      this.jobs.transition(row, status, now, { statusDetails, stepTimeoutInMinutes, byDevice: true }),
    );
    const answer: Record<string, unknown> = {};
    if (req.includeJobExecutionState === true) answer.executionState = state(updated);
    if (req.includeJobDocument === true) answer.jobDocument = await this.document(jobId);
    return answer;
  }

  /** An execution the device may see: released to it, by number or the latest. */
  private async visible(
    jobId: string,
    thingName: string,
    req: Record<string, unknown>,
  ): Promise<StoredExecution | undefined> {
    const number = optionalInt(req.executionNumber, "executionNumber");
    const row = await this.jobs.executionRow(jobId, thingName, number);
    return row?.released ? row : undefined;
  }

  private async execution(row: StoredExecution, withDocument: boolean): Promise<Record<string, unknown>> {
    const e = this.jobs.toExecution(row);
    const out: Record<string, unknown> = {
      jobId: e.jobId,
      thingName: e.thingName,
      status: e.status,
      queuedAt: e.queuedAt,
      lastUpdatedAt: e.lastUpdatedAt,
      versionNumber: e.versionNumber,
      executionNumber: e.executionNumber,
    };
    if (withDocument) out.jobDocument = await this.document(row.jobId);
    if (e.statusDetails) out.statusDetails = e.statusDetails;
    if (e.startedAt !== undefined) out.startedAt = e.startedAt;
    if (e.approximateSecondsBeforeTimedOut !== undefined) {
      out.approximateSecondsBeforeTimedOut = e.approximateSecondsBeforeTimedOut;
    }
    return out;
  }

  private async document(jobId: string): Promise<unknown> {
    const documentId = (await this.jobs.jobRow(jobId))?.documentId;
    if (!documentId) return {};
    let cached = this.docs.get(documentId);
    if (!cached) {
      cached = { document: await this.jobs.documentOf(jobId) };
      this.docs.set(documentId, cached);
    }
    return cached.document;
  }
}

function parse(payload: Buffer): Record<string, unknown> {
  if (payload.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(payload.toString("utf8"));
  } catch {
    throw new DeviceError("InvalidJson", "The payload is not JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new DeviceError("InvalidJson", "The payload must be a JSON object");
  }
  return value as Record<string, unknown>;
}

function withToken(body: Record<string, unknown>, clientToken: string | undefined): Record<string, unknown> {
  return clientToken === undefined ? body : { ...body, clientToken };
}

function summary(r: StoredExecution): Record<string, unknown> {
  const s: Record<string, unknown> = {
    jobId: r.jobId,
    queuedAt: r.queuedAt,
    lastUpdatedAt: r.lastUpdatedAt,
    versionNumber: r.versionNumber,
    executionNumber: String(r.executionNumber),
  };
  if (r.startedAt !== null) s.startedAt = r.startedAt;
  return s;
}

function state(r: StoredExecution): Record<string, unknown> {
  const s: Record<string, unknown> = { status: r.status, versionNumber: r.versionNumber };
  if (r.statusDetails !== null) s.statusDetails = r.statusDetails;
  return s;
}

function details(value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new DeviceError("InvalidRequest", "statusDetails must be a map of name/value strings");
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.some(([, v]) => typeof v !== "string")) {
    throw new DeviceError("InvalidRequest", "statusDetails values must be strings");
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

function stepTimeout(value: unknown): number | undefined {
  const minutes = optionalInt(value, "stepTimeoutInMinutes");
  if (minutes !== undefined && (minutes < 1 || minutes > MAX_STEP_MINUTES)) {
    throw new DeviceError("InvalidRequest", `stepTimeoutInMinutes must be 1 to ${MAX_STEP_MINUTES}`);
  }
  return minutes;
}

function optionalInt(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isSafeInteger(n))
    throw new DeviceError("InvalidRequest", `${name} must be an integer`);
  return n;
}
