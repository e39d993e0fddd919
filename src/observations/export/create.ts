import { Counter, Gauge, type Registry } from "prom-client";
import type { Mailer } from "../../mail/index.js";
import type { Logger } from "../../observability/index.js";
import { storagePath, type UrlSigner } from "../../signing/index.js";
import type { ThingRegistry } from "../../things/index.js";
import type { ExportReader } from "../reader.js";
import type { ExportFiles } from "./files.js";
import { ExportRunner } from "./runner.js";
import { ExportScheduler } from "./scheduler.js";
import { ExportService } from "./service.js";
import type { ExportStore } from "./store.js";

export interface ExportDeps {
  /** Where export jobs and their executions are kept. */
  store: ExportStore;
  reader: ExportReader;
  registry: ThingRegistry;
  mailer: Mailer;
  logger: Logger;
  clock: () => number;
  /** Where export files are written and read: the node's disk, or the database a cluster shares. */
  files: ExportFiles;
  /** The service's signer of `/storage/...` URLs. */
  signer: UrlSigner;
  /** Where the export metrics are registered. */
  metrics?: Registry;
}

/** Everything data export needs, wired once. */
export interface Exports {
  service: ExportService;
  runner: ExportRunner;
  scheduler: ExportScheduler;
  store: ExportStore;
  files: ExportFiles;
  signer: UrlSigner;
  /** The path of an execution's file under the open `/storage/` prefix. */
  downloadPath(executionId: string): string;
  downloadUrl(executionId: string): string;
}

export function createExports(d: ExportDeps): Exports {
  const { store } = d;
  const files = d.files;
  const signer = d.signer;
  const downloadPath = (id: string): string => storagePath("exports", id);
  const downloadUrl = (id: string): string => signer.signFor({ method: "GET", path: downloadPath(id) });
  const registers = d.metrics ? [d.metrics] : [];
  const executions = new Counter({
    name: "dms_export_executions_total",
    help: "Export executions ended, by status",
    labelNames: ["status"],
    registers,
  });
  const rows = new Counter({
    name: "dms_export_rows_total",
    help: "Observation rows written to export files",
    registers,
  });
  const running = new Gauge({
    name: "dms_export_running_rows",
    help: "Rows the running export execution has written so far (0 when none runs)",
    registers,
  });
  const runner = new ExportRunner({
    onEnd: (status, written) => {
      executions.inc({ status });
      rows.inc(written);
    },
    onProgress: (written) => running.set(written ?? 0),
    store,
    reader: d.reader,
    files,
    mailer: d.mailer,
    logger: d.logger,
    clock: d.clock,
    downloadUrl,
  });
  const service = new ExportService({ store, runner, files, registry: d.registry, clock: d.clock, logger: d.logger });
  const scheduler = new ExportScheduler({ store, service, runner, clock: d.clock, logger: d.logger });
  return { service, runner, scheduler, store, files, signer, downloadPath, downloadUrl };
}
