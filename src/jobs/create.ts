import type { Identity } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import type { Logger } from "../observability/index.js";
import type { UrlSigner } from "../signing/index.js";
import type { ThingRegistry } from "../things/index.js";
import { JobDocuments } from "./documents.js";
import { ThingJobs } from "./jobs.js";
import { JobsService } from "./service.js";
import type { JobStore } from "./store.js";

export interface JobsDeps {
  /** Where thing jobs, their executions and documents are kept. */
  store: JobStore;
  bus: EventBus;
  registry: ThingRegistry;
  identity: Pick<Identity, "domain" | "domains">;
  /** Signs the job documents' upload URLs. */
  signer: UrlSigner;
  clock: () => number;
  logger: Logger;
}

/** The jobs capability: the jobs with their documents (the device side and the scheduler use them) and the operations. */
export interface Jobs {
  jobs: ThingJobs;
  service: JobsService;
}

export function createJobs({ store, bus, registry, identity, signer, clock, logger }: JobsDeps): Jobs {
  const documents = new JobDocuments(store, signer, clock);
  const jobs = new ThingJobs({ store, registry, bus, documents, clock, logger });
  // On the bus, so that the MQTT bridge hears of jobs changed by the REST or scheduler process.
  jobs.onPendingChanged((things) => bus.emit("jobs.pending", { things: [...things] }));
  return { jobs, service: new JobsService({ jobs, identity, registry }) };
}
