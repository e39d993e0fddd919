import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { createApp, routeModules, type Api, type Services } from "./api/index.js";
import { Identity, Tokens, jwtSecret } from "./auth/index.js";
import { EventBus } from "./bus/index.js";
import type { Config } from "./config/index.js";
import { DeviceJobs, JobDocuments, JobScheduler, ThingJobs, UrlSigner } from "./jobs/index.js";
import { migrations } from "./migrations.js";
import { DeviceBridge } from "./mqtt/index.js";
import { createLogger, createMetrics, type Logger } from "./observability/index.js";
import { provisionFromFile } from "./provision/index.js";
import { openDatabase } from "./store/index.js";
import { ThingRegistry } from "./things/index.js";

/** A part of the service with a life of its own (listeners, consumers, schedulers). */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface Dms {
  services: Services;
  app: Api;
  /** Base URL of the REST interface when it listens. */
  url: string | undefined;
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: () => number;
  logger?: Logger;
  /** How often the job scheduler looks for due timers (ms); tests shorten it. */
  jobsPollMs?: number;
}

/** Opens storage, applies provisioning and starts the parts `DMS_ROLES` names. */
export async function startDms(config: Config, options: StartOptions = {}): Promise<Dms> {
  const logger = options.logger ?? createLogger(config.DMS_LOG_LEVEL);
  const clock = options.clock ?? Date.now;
  const db = openDatabase({ dataDir: config.DMS_DATA_DIR, migrations });
  const bus = new EventBus();
  const identity = new Identity(db, bus);
  const registry = new ThingRegistry(db, bus, (id) => identity.domain(id) !== undefined);
  const secret = jwtSecret(config.DMS_JWT_SECRET, config.DMS_DATA_DIR);
  const documents = new JobDocuments(db, new UrlSigner(secret, config.DMS_PUBLIC_URL, clock), clock);
  const jobs = new ThingJobs({ db, registry, bus, documents, clock, logger });
  const services: Services = {
    config,
    db,
    logger,
    metrics: createMetrics(),
    bus,
    identity,
    tokens: new Tokens(secret, clock),
    registry,
    clock,
    jobs,
  };
  if (config.DMS_PROVISION) {
    await provisionFromFile(config.DMS_PROVISION, services);
    logger.info({ file: config.DMS_PROVISION }, "provisioning applied");
  }

  const app = createApp(services, routeModules);
  const components: Component[] = [];
  if (config.roles.has("scheduler")) {
    services.jobScheduler = new JobScheduler(jobs, logger, options.jobsPollMs);
    components.push(services.jobScheduler);
  }
  if (config.roles.has("mqtt")) {
    const device = new DeviceJobs(jobs);
    services.deviceBridge = new DeviceBridge({
      mqttUrl: config.MQTT_URL,
      port: config.DMS_MQTT_PORT,
      host: config.DMS_HTTP_HOST,
      jobs: {
        handle: (thingName, suffix, payload) => device.handle(thingName, suffix, payload),
        notifications: (thingName) => device.notifications(thingName),
        onPendingChanged: (listener) => jobs.onPendingChanged(listener),
      },
      verifyThingSecret: (thingName, s) => registry.verifyThingSecret(thingName, s),
      bus,
      logger,
      registry: services.metrics.registry,
    });
    components.push(services.deviceBridge);
  }
  const started: Component[] = [];
  let server: ServerType | undefined;
  let url: string | undefined;

  const close = async (): Promise<void> => {
    for (const c of started.reverse()) {
      await c.stop().catch((err: unknown) => logger.error({ err, component: c.name }, "stop failed"));
    }
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
    jobs.close();
    db.close();
  };

  try {
    for (const c of components) {
      await c.start();
      started.push(c);
      logger.info({ component: c.name }, "started");
    }
    if (config.roles.has("api")) {
      server = await listen(app, config.DMS_HTTP_HOST, config.DMS_HTTP_PORT);
      const { port } = server.address() as AddressInfo;
      url = `http://127.0.0.1:${port}`;
      logger.info({ port }, "REST interface listening");
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { services, app, url, close };
}

function listen(app: Api, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, () => resolve(server));
    server.once("error", reject);
  });
}
