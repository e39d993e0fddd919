import { createReadStream, createWriteStream, mkdirSync, rmSync } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/** One export file being written: readers see it only once `commit` resolves. */
export interface ExportFileWriter {
  stream: Writable;
  /** Makes the file the execution's, replacing one written before; after the stream finished. */
  commit(): Promise<void>;
  /** Drops what was written. */
  abort(): Promise<void>;
}

/**
 * Where export files live: on the node's disk (`localExportFiles`), or in the shared database
 * (`PgExportFiles`), so that any node of a cluster serves a file whichever node wrote it. A file
 * is written aside and made visible whole at `commit`, so a reader never sees half a file.
 */
export interface ExportFiles {
  create(executionId: string): ExportFileWriter;
  /** The file's bytes and size, or undefined when the execution has none. */
  open(executionId: string): Promise<{ stream: Readable; size: number } | undefined>;
  size(executionId: string): Promise<number | undefined>;
  remove(executionId: string): Promise<void>;
}

/** Export files under `<dataDir>/exports`, one `<execution>.csv.gz` each: a single node's. */
export function localExportFiles(dataDir: string): ExportFiles {
  const dir = join(dataDir, "exports");
  const path = (id: string): string => join(dir, `${id}.csv.gz`);
  const size = async (id: string): Promise<number | undefined> => {
    try {
      return (await stat(path(id))).size;
    } catch {
      return undefined;
    }
  };
  return {
    create(id) {
      // Made on first use, so a service that never exports leaves no trace in its data dir.
      mkdirSync(dir, { recursive: true });
      const tmp = join(dir, `.${id}.${process.pid}.tmp`);
      return {
        stream: createWriteStream(tmp),
        commit: () => rename(tmp, path(id)),
        abort: async () => rmSync(tmp, { force: true }),
      };
    },
    async open(id) {
      const bytes = await size(id);
      return bytes === undefined ? undefined : { stream: createReadStream(path(id)), size: bytes };
    },
    size,
    remove: (id) => rm(path(id), { force: true }),
  };
}
