import { randomBytes } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { pgTransaction, type PgPool } from "../../store/index.js";
import type { ExportFileWriter, ExportFiles } from "./files.js";

/** Bytes per stored chunk: a writer holds one chunk in memory, a reader one. */
export const EXPORT_CHUNK_BYTES = 1024 * 1024;
/** Chunks no file names, older than this, are a dead writer's, swept. */
const ABANDONED_AFTER = "1 hour";

/**
 * Export files in PostgreSQL (`exportPgMigrations`), so that a file one node of a cluster wrote
 * downloads from every node. A writer stores its bytes as 1 MiB chunks under a write id of its
 * own; `commit` points the execution's row at that write id and drops the chunks of the one
 * before, in one transaction, so a reader sees the old file or the new one, never half of one.
 * A writer that dies leaves chunks no row names, which the next start sweeps.
 */
export class PgExportFiles implements ExportFiles {
  constructor(private readonly pool: PgPool) {
    // A failed sweep leaves the chunks for the next start; it never fails this one.
    this.sweepAbandoned().catch(() => undefined);
  }

  /** Deletes the chunks of writers that died (no file names them, older than any live writer). */
  async sweepAbandoned(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM export_file_chunks c WHERE c.written_at < now() - interval '${ABANDONED_AFTER}'
         AND NOT EXISTS (SELECT 1 FROM export_files f WHERE f.write_id = c.write_id)`,
    );
    return rowCount ?? 0;
  }

  create(executionId: string): ExportFileWriter {
    const writeId = randomBytes(16).toString("hex");
    let seq = 0;
    let size = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const insert = (data: Buffer): Promise<unknown> =>
      this.pool.query("INSERT INTO export_file_chunks (write_id, seq, data) VALUES ($1, $2, $3)", [
        writeId,
        seq++,
        data,
      ]);
    /** Writes every whole chunk held, and at the end the rest: byte n is in chunk n / EXPORT_CHUNK_BYTES. */
    const flush = async (final: boolean): Promise<void> => {
      if (pendingBytes === 0 || (!final && pendingBytes < EXPORT_CHUNK_BYTES)) return;
      let held = Buffer.concat(pending, pendingBytes);
      while (held.length >= EXPORT_CHUNK_BYTES || (final && held.length > 0)) {
        await insert(held.subarray(0, EXPORT_CHUNK_BYTES));
        held = held.subarray(Math.min(held.length, EXPORT_CHUNK_BYTES));
      }
      pending = held.length > 0 ? [held] : [];
      pendingBytes = held.length;
    };
    const stream = new Writable({
      highWaterMark: EXPORT_CHUNK_BYTES,
      write: (chunk: Buffer, _encoding, callback) => {
        size += chunk.length;
        pending.push(chunk);
        pendingBytes += chunk.length;
        flush(false).then(() => callback(), callback);
      },
      final: (callback) => {
        flush(true).then(() => callback(), callback);
      },
    });
    const dropChunks = async (): Promise<void> => {
      await this.pool.query("DELETE FROM export_file_chunks WHERE write_id = $1", [writeId]);
    };
    return {
      stream,
      commit: () =>
        pgTransaction(this.pool, async (tx) => {
          const { rows } = await tx.query<{ write_id: string }>(
            "SELECT write_id FROM export_files WHERE execution_id = $1 FOR UPDATE",
            [executionId],
          );
          await tx.query(
            `INSERT INTO export_files (execution_id, write_id, size) VALUES ($1, $2, $3)
             ON CONFLICT (execution_id) DO UPDATE SET write_id = excluded.write_id, size = excluded.size`,
            [executionId, writeId, size],
          );
          const before = rows[0]?.write_id;
          if (before !== undefined) await tx.query("DELETE FROM export_file_chunks WHERE write_id = $1", [before]);
        }),
      abort: dropChunks,
    };
  }

  async open(executionId: string): Promise<{ stream: Readable; size: number } | undefined> {
    const file = await this.file(executionId);
    if (!file) return undefined;
    return { stream: Readable.from(this.chunks(file.writeId, file.size)), size: file.size };
  }

  async size(executionId: string): Promise<number | undefined> {
    return (await this.file(executionId))?.size;
  }

  async remove(executionId: string): Promise<void> {
    const { rows } = await this.pool.query<{ write_id: string }>(
      "DELETE FROM export_files WHERE execution_id = $1 RETURNING write_id",
      [executionId],
    );
    // Chunks go after the row: a failure in between leaves chunks to sweep, never a file without bytes.
    for (const r of rows) await this.pool.query("DELETE FROM export_file_chunks WHERE write_id = $1", [r.write_id]);
  }

  private async file(executionId: string): Promise<{ writeId: string; size: number } | undefined> {
    const { rows } = await this.pool.query<{ write_id: string; size: string }>(
      "SELECT write_id, size FROM export_files WHERE execution_id = $1",
      [executionId],
    );
    const row = rows[0];
    return row && { writeId: row.write_id, size: Number(row.size) };
  }

  /** A file's bytes, one chunk row at a time. */
  private async *chunks(writeId: string, size: number): AsyncGenerator<Buffer> {
    for (let seq = 0; seq * EXPORT_CHUNK_BYTES < size; seq++) {
      const { rows } = await this.pool.query<{ data: Buffer }>(
        "SELECT data FROM export_file_chunks WHERE write_id = $1 AND seq = $2",
        [writeId, seq],
      );
      // Removed or replaced while it streams: the reader sees a short body, as with a deleted file.
      const data = rows[0]?.data;
      if (!data) return;
      yield data;
    }
  }
}
