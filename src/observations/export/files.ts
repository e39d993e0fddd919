import {
  createReadStream,
  createWriteStream,
  mkdirSync,
  renameSync,
  rmSync,
  statSync,
  type ReadStream,
  type WriteStream,
} from "node:fs";
import { join } from "node:path";

/**
 * Where export files live. A file is written to a temporary name and renamed
 * into place when complete, so a reader never sees half a file. Kept behind
 * this small interface so the general file store can replace it.
 */
export interface ExportFiles {
  create(executionId: string): { stream: WriteStream; commit(): void; abort(): void };
  open(executionId: string): ReadStream | undefined;
  size(executionId: string): number | undefined;
  remove(executionId: string): void;
}

export function localExportFiles(dataDir: string): ExportFiles {
  const dir = join(dataDir, "exports");
  const path = (id: string): string => join(dir, `${id}.csv.gz`);
  return {
    create(id) {
      // Made on first use, so a service that never exports leaves no trace in its data dir.
      mkdirSync(dir, { recursive: true });
      const tmp = join(dir, `.${id}.${process.pid}.tmp`);
      const stream = createWriteStream(tmp);
      return {
        stream,
        commit: () => renameSync(tmp, path(id)),
        abort: () => rmSync(tmp, { force: true }),
      };
    },
    open(id) {
      try {
        statSync(path(id));
      } catch {
        return undefined;
      }
      return createReadStream(path(id));
    },
    size(id) {
      try {
        return statSync(path(id)).size;
      } catch {
        return undefined;
      }
    },
    remove(id) {
      rmSync(path(id), { force: true });
    },
  };
}
