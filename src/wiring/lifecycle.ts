import { serve, type ServerType } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp, routeModules, type Api } from "../api/index.js";
import type { Config } from "../config/index.js";
import { answerMalformedRequests } from "../errors/index.js";
import { provisionFromFile } from "../provision/index.js";
import type { Capabilities } from "./capabilities.js";
import type { Parts } from "./parts.js";
import type { Component, Dms, Services, StartOptions } from "./types.js";

/**
 * Step three of `startDms`: listens (so that `/healthz` and `/readyz` answer at once), applies
 * provisioning, then starts the parts in order; `close` stops them in the reverse order and
 * closes the capabilities and the stores. A failure on the way closes what was started.
 */
export async function startParts(
  config: Config,
  options: StartOptions,
  capabilities: Capabilities,
  parts: Parts,
  services: Services,
): Promise<Dms> {
  const { readiness, logger, metrics, credentials, authenticate, publicUrl, search, registry, jobs, bus } =
    capabilities;
  const { relay, stores } = capabilities;
  const { components, ruleCache } = parts;
  const provisioning = config.DMS_PROVISION ? readiness.register("provisioning", "not started") : undefined;
  const startup = readiness.register("components", "waiting for provisioning");

  const app = createApp({ ...services, authentication: authenticate }, routeModules);
  const started: Component[] = [];
  let server: ServerType | undefined;
  let url: string | undefined;

  const close = async (): Promise<void> => {
    for (const c of started.reverse()) {
      await c.stop().catch((err: unknown) => logger.error({ err, component: c.name }, "stop failed"));
    }
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
    search.close();
    registry.close();
    ruleCache?.close();
    jobs.close();
    await capabilities.observationBackend.close();
    // What the last registry changes started (job executions) is written before the stores close.
    await bus.settled();
    await relay?.stop();
    await capabilities.databaseProbe?.stop();
    await stores.close();
  };

  try {
    // Listening first: probes and the admin API answer while a large provisioning file is applied.
    if (config.roles.has("api")) {
      server = await listen(app, config.DMS_HTTP_HOST, config.DMS_HTTP_PORT);
      const { port } = server.address() as AddressInfo;
      url = `http://127.0.0.1:${port}`;
      // A port chosen by the OS (tests) is known only now: signed URLs must point at it.
      if (config.DMS_HTTP_PORT === 0 && publicUrl.value.endsWith(":0")) publicUrl.value = url;
      logger.info({ port }, "REST interface listening");
      options.onListening?.(url);
    }
    if (config.DMS_PROVISION && provisioning) {
      const file = config.DMS_PROVISION;
      provisioning.waiting(`waiting for other processes' provisioning`);
      // Every node of a cluster may start with the same file: one applies it at a time, each on
      // what the ones before it wrote (read afresh, not as far as the bus has relayed it).
      const summary = await stores.locks.exclusive("provisioning", async () => {
        provisioning.waiting(`reading ${file}`);
        await capabilities.identity.refresh();
        return provisionFromFile(file, services, ({ thingsDone, thingsTotal }) => {
          metrics.provisioning.set({ state: "applied" }, thingsDone);
          metrics.provisioning.set({ state: "total" }, thingsTotal);
          provisioning.waiting(`things ${thingsDone} of ${thingsTotal} applied`);
        });
      });
      provisioning.ready();
      logger.info({ file: config.DMS_PROVISION, ...summary, secretHashes: credentials.work }, "provisioning applied");
    }
    // The engine and the device bridge start on a complete registry: no observation of a thing
    // the file is about to create ends as a dead letter, no device is refused for a secret not yet applied.
    for (const c of components) {
      startup.waiting(`starting ${c.name}`);
      await c.start();
      started.push(c);
      logger.info({ component: c.name }, "started");
    }
    startup.ready();
  } catch (err) {
    await close();
    throw err;
  }
  return { services, app, url, close };
}

function listen(app: Api, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, () => resolve(server));
    answerMalformedRequests(server as Server);
    server.once("error", reject);
  });
}
