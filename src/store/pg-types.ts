import pg from "pg";

const toNumber = (value: string): number => Number(value);

/**
 * Query types that read BIGINT columns as numbers, for stores whose BIGINTs are epoch
 * milliseconds and row ids (all below 2^53); the driver's default is a string.
 */
export const int8AsNumber: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8
      ? toNumber
      : pg.types.getTypeParser(oid, format ?? "text")) as typeof pg.types.getTypeParser,
};

/** Runs one statement on `db` with BIGINTs read as numbers; answers its rows and how many it touched. */
export async function pgQuery<R extends pg.QueryResultRow>(
  db: Pick<pg.Pool | pg.PoolClient, "query">,
  text: string,
  values: unknown[] = [],
): Promise<{ rows: R[]; rowCount: number }> {
  const result = await db.query<R>({ text, values, types: int8AsNumber });
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}
