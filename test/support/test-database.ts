/**
 * Which database `startTestDms` puts a service's stores on. By default none is given, and the
 * service keeps them on SQLite in its data directory; the `rest-postgres` project of
 * vitest.config.ts provides a PostgreSQL database per service (test/support/postgres-backend.ts),
 * so that the same REST tests run once on each backend.
 */
let provider: ((dataDir: string) => Promise<string>) | undefined;

/**
 * `databaseFor(dataDir)` answers the `DMS_DATABASE_URL` of the deployment whose data directory
 * is `dataDir`: services started on one data directory (a restart, a second process) share one
 * database, as they share one SQLite file otherwise.
 */
export function provideTestDatabases(databaseFor: (dataDir: string) => Promise<string>): void {
  provider = databaseFor;
}

/** The database of the deployment on `dataDir`, or undefined when the test project provides none. */
export function testDatabaseUrl(dataDir: string): Promise<string> | undefined {
  return provider?.(dataDir);
}
