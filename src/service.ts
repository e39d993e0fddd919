import type { Config } from "./config/index.js";
import { buildCapabilities, partsForRoles, startParts, type Dms, type StartOptions } from "./wiring/index.js";

export type { Component, Dms, Services, StartOptions } from "./wiring/index.js";

/**
 * Opens storage, starts listening (so that `/healthz` and `/readyz` answer at
 * once), applies provisioning, then starts the parts `DMS_ROLES` names;
 * `/readyz` answers 200 from then on. Resolves when everything has started.
 *
 * Which parts each role adds (every process builds the capabilities REST answers with):
 *
 * | role        | parts                                                                 |
 * |-------------|-----------------------------------------------------------------------|
 * | `api`       | the REST listener                                                     |
 * | `engine`    | the rule engine with its Kafka source (createEngineService)            |
 * | `actions`   | the outbox's deliveries and the events publisher                      |
 * | `scheduler` | the export schedules, the retention sweeper, the jobs' timers         |
 * | `mqtt`      | the device MQTT bridge (jobs and observations of devices)             |
 * | `proxy`     | the TCP proxy and its control interface                               |
 * | `store`     | with `OPENSEARCH_URL` and Kafka: indexes the observations topic        |
 */
export async function startDms(config: Config, options: StartOptions = {}): Promise<Dms> {
  const capabilities = await buildCapabilities(config, options);
  const parts = await partsForRoles(config, options, capabilities);
  const c = capabilities;
  const services = {
    ...c,
    db: c.stores.sqlite,
    ruleStore: c.rules.store,
    rules: c.rules.service,
    ingest: parts.ingest,
    engine: parts.engine,
    jobScheduler: parts.jobScheduler,
    retention: parts.retention,
    deviceBridge: parts.deviceBridge,
    proxy: parts.proxy,
  };
  return startParts(config, options, capabilities, parts, services);
}
