import { randomSecret } from "../config/index.js";
import type { PgMigration, PgPool } from "../store/index.js";
import type { KeyName, KeyStore } from "./store.js";

export const keysPgMigrations: PgMigration[] = [
  {
    id: "keys-001",
    up: `CREATE TABLE service_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  },
];

/**
 * Keys in PostgreSQL, shared by every node of a cluster (no node has a file the others need).
 * The first node to ask writes its key; a node racing it reads the one written.
 */
export class PgKeyStore implements KeyStore {
  constructor(private readonly pool: PgPool) {}

  async key(name: KeyName): Promise<string> {
    await this.pool.query("INSERT INTO service_keys (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", [
      name,
      randomSecret(),
    ]);
    const { rows } = await this.pool.query<{ value: string }>("SELECT value FROM service_keys WHERE name = $1", [name]);
    return rows[0]!.value;
  }
}
