import { authorize, requireReadWrite, type Identity, type Principal } from "../auth/index.js";
import { ApiError, notAuthorized, notFound } from "../errors/index.js";
import type { ThingRegistry } from "../things/index.js";
import type { UploadRequest, UploadTicket } from "./documents.js";
import type { ThingJobs } from "./jobs.js";
import type { StoredJob } from "./store.js";
import type {
  ExecutionStatus,
  JobExecution,
  JobExecutionSummaryItem,
  JobStatus,
  NewJob,
  TargetSelection,
  ThingJob,
  ThingJobListItem,
} from "./types.js";

export interface JobsServiceDeps {
  jobs: ThingJobs;
  identity: Pick<Identity, "domain" | "domains">;
  /** Thing groups, for LIST's `group` filter. */
  registry: Pick<ThingRegistry, "group">;
}

/** What CANCEL and ASSOCIATE_TARGETS answer. */
export interface JobRef {
  jobId: string;
  description: string;
}

/**
 * The thing-job operations with their access rules, as the Rules area has them: a job belongs
 * to the domain of its job document; reading it needs `ThingJobs.READ` there, changing it a
 * ReadWrite role and `ThingJobs.UPDATE` or `.DELETE`; targets need read access to their domains.
 */
export class JobsService {
  private readonly jobs: ThingJobs;
  private readonly identity: JobsServiceDeps["identity"];
  private readonly registry: JobsServiceDeps["registry"];

  constructor(deps: JobsServiceDeps) {
    this.jobs = deps.jobs;
    this.identity = deps.identity;
    this.registry = deps.registry;
  }

  /** GENERATE_UPLOAD_URL: a signed URL for one PUT of a job document of `domain`. */
  async uploadTicket(p: Principal, documentName: string, domain: string): Promise<UploadTicket> {
    requireReadWrite(p);
    if (!this.identity.domain(domain))
      throw new ApiError("NOT_AUTHORIZED_DOMAIN", `Domain ${domain} does not exist`, "domain");
    authorize(p, "ThingJobs.CREATE", domain);
    return this.jobs.documents.createTicket(documentName, domain);
  }

  /** The signed PUT of a job document: no principal, the URL's signature is the authority. */
  upload(request: UploadRequest): Promise<void> {
    return this.jobs.documents.upload(request);
  }

  async create(p: Principal, body: NewJob): Promise<ThingJob> {
    requireReadWrite(p);
    authorize(p, "ThingJobs.CREATE", body.domain);
    authorize(p, "ThingJobs.READ", body.domain);
    if (body.targets.groups?.length) authorize(p, "ThingGroups.READ", body.domain);
    if (body.targets.things?.length) authorize(p, "Things.READ", body.domain);
    return this.jobs.create(body, {
      thing: (d) => p.can("Things.READ", d),
      group: (d) => p.can("ThingGroups.READ", d),
    });
  }

  async cancel(p: Principal, jobId: string, comment: string | undefined): Promise<JobRef> {
    const job = await this.job(p, jobId, "UPDATE");
    await this.jobs.cancel(job.jobId, comment);
    return { jobId: job.jobId, description: job.description };
  }

  async describe(p: Principal, jobId: string): Promise<ThingJob> {
    return this.jobs.describe((await this.job(p, jobId, "READ")).jobId);
  }

  /** The jobs of every domain where the caller holds `ThingJobs.READ`, newest first. */
  async list(
    p: Principal,
    query: {
      status?: JobStatus | undefined;
      targetSelection?: TargetSelection | undefined;
      group?: string | undefined;
    },
  ): Promise<ThingJobListItem[]> {
    const readable = new Set(
      this.identity
        .domains()
        .filter((d) => p.can("ThingJobs.READ", d.id))
        .map((d) => d.id),
    );
    if (readable.size === 0) throw notAuthorized(`User ${p.userName} holds ThingJobs.READ on no domain`);
    let groupId: string | undefined;
    if (query.group !== undefined) {
      const group = this.registry.group(query.group);
      if (!group) throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${query.group}`, "group");
      authorize(p, "ThingGroups.READ", group.domain);
      groupId = group.id;
    }
    return this.jobs.list(readable, { status: query.status, targetSelection: query.targetSelection, groupId });
  }

  async executions(
    p: Principal,
    jobId: string,
    status: ExecutionStatus | undefined,
  ): Promise<JobExecutionSummaryItem[]> {
    return this.jobs.executions((await this.job(p, jobId, "READ")).jobId, status);
  }

  /** ASSOCIATE_TARGETS_WITH_JOB: thing groups the caller may read join a CONTINUOUS job. */
  async associate(p: Principal, jobId: string, groups: string[], comment: string | undefined): Promise<JobRef> {
    const job = await this.job(p, jobId, "UPDATE");
    await this.jobs.associate(job.jobId, groups, comment, (d) => p.can("ThingGroups.READ", d));
    return { jobId: job.jobId, description: job.description };
  }

  async execution(
    p: Principal,
    jobId: string,
    thingName: string,
    executionNumber: number | undefined,
  ): Promise<JobExecution> {
    return this.jobs.execution((await this.job(p, jobId, "READ")).jobId, thingName, executionNumber);
  }

  async cancelExecution(
    p: Principal,
    jobId: string,
    thingName: string,
    force: boolean,
    expectedVersion: number | undefined,
  ): Promise<void> {
    await this.jobs.cancelExecution((await this.job(p, jobId, "UPDATE")).jobId, thingName, force, expectedVersion);
  }

  async deleteExecution(
    p: Principal,
    jobId: string,
    thingName: string,
    executionNumber: number,
    force: boolean,
  ): Promise<void> {
    await this.jobs.deleteExecution((await this.job(p, jobId, "DELETE")).jobId, thingName, executionNumber, force);
  }

  async delete(p: Principal, jobId: string, force: boolean): Promise<void> {
    await this.jobs.delete((await this.job(p, jobId, "DELETE")).jobId, force);
  }

  /** GET_JOB_DOCUMENT of a job the caller may read. */
  async document(p: Principal, jobId: string): Promise<unknown> {
    return this.jobs.documentOf((await this.job(p, jobId, "READ")).jobId);
  }

  /** The job, after the caller's privilege on its domain (the domain of its job document). */
  private async job(p: Principal, jobId: string, privilege: "READ" | "UPDATE" | "DELETE"): Promise<StoredJob> {
    const job = await this.jobs.requireJob(jobId);
    if (privilege !== "READ") requireReadWrite(p);
    authorize(p, `ThingJobs.${privilege}`, job.domain);
    return job;
  }
}
