import { randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { z } from "zod";

/** Every part of dms that one process can run; `DMS_ROLES` picks a subset. */
export const ROLES = ["api", "engine", "actions", "proxy", "mqtt", "scheduler", "store"] as const;
export type Role = (typeof ROLES)[number];

const PORT = "expected a port number 0-65535";
const port = z
  .string()
  .regex(/^\d{1,5}$/, PORT)
  .transform(Number)
  .pipe(z.number().max(65535, PORT));
const optionalUrl = z.string().url().optional();
const postgresUrl = z
  .string()
  .url()
  .regex(/^postgres(ql)?:\/\//, "expected a postgres:// connection string");
const bool = z.enum(["true", "false"]).transform((v) => v === "true");
const portRange = z
  .string()
  .regex(/^\d+-\d+$/, "expected <first>-<last>, for example 40000-40999")
  .transform((v) => {
    const [first, last] = v.split("-").map(Number) as [number, number];
    return { first, last };
  })
  .refine((r) => r.first >= 1 && r.last <= 65535 && r.first <= r.last, "expected 1 <= first <= last <= 65535");

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
/** A retention window such as `30d`, `12h`, `90m` (milliseconds), or `unbounded` (undefined: keep forever). */
const retention = z
  .string()
  .regex(/^(unbounded|\d+[smhdw])$/, "expected a duration such as 30d, 12h, 90m, 3600s, 2w, or unbounded")
  .transform((v) => (v === "unbounded" ? undefined : Number(v.slice(0, -1)) * DURATION_UNITS[v.slice(-1)]!))
  .refine((ms) => ms === undefined || ms > 0, "expected a window longer than 0")
  .optional();

const schema = z.object({
  DMS_HTTP_PORT: port.default(8080),
  DMS_HTTP_HOST: z.string().min(1).default("0.0.0.0"),
  DMS_DATA_DIR: z.string().min(1).default("./data"),
  // Every store on this PostgreSQL database instead of SQLite in DMS_DATA_DIR (docs/storage.md).
  DMS_DATABASE_URL: postgresUrl.optional(),
  // Connections this process keeps to it at most; the bus listener holds one of them for good.
  DMS_DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(1000).default(10),
  // Longest a query waits for a connection (all in use, or the server not answering a connect) before
  // it fails and REST answers 503 SERVICE_UNAVAILABLE, rather than waiting on.
  DMS_DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
  // Longest one statement runs before PostgreSQL cancels it (statement_timeout; 0: no limit); FIND's own budget applies to its reads.
  DMS_DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(60_000),
  DMS_PROVISION: z.string().min(1).optional(),
  DMS_PUBLIC_URL: optionalUrl,
  DMS_STACK_NAME: z
    .string()
    .regex(/^[0-9a-zA-Z_-]+$/, "letters, digits, '-' and '_' only")
    .default("dev"),
  DMS_ENV: z.string().min(1).default("development"),
  DMS_JWT_SECRET: z.string().min(16, "at least 16 characters").optional(),
  DMS_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024),
  DMS_BUS_POLL_MS: z.coerce.number().int().min(10).max(10_000).default(200),
  // FIND runs on threads of its own, so that no query holds the event loop; 0 runs it in-process.
  DMS_FIND_THREADS: z.coerce
    .number()
    .int()
    .min(0)
    .max(64)
    .default(Math.max(1, Math.min(4, availableParallelism() - 1))),
  DMS_FIND_TIMEOUT_MS: z.coerce.number().int().min(10).max(600_000).default(15_000),
  // Closed days' columns each FIND thread keeps in memory (docs/observations.md, column cache).
  DMS_FIND_COLUMN_CACHE_MB: z.coerce.number().int().min(16).max(65_536).default(320),
  DMS_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  KAFKA_BROKERS: z
    .string()
    .regex(/^[^,\s]+(,[^,\s]+)*$/, "comma-separated host:port list")
    .optional(),
  KAFKA_OBSERVATIONS_TOPIC: z.string().min(1).default("dms.observations"),
  KAFKA_EVENTS_TOPIC: z.string().min(1).default("dms.events"),
  KAFKA_GROUP_ID: z.string().min(1).default("dms-engine"),
  /** A dead engine's partitions move after this silence: failover takes about this plus one heartbeat. */
  KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(300_000).default(6000),
  KAFKA_HEARTBEAT_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  // How long the engine's state may lag its batches before a checkpoint makes it durable (docs/engine.md).
  DMS_ENGINE_CHECKPOINT_MS: z.coerce.number().int().min(10).max(600_000).default(5000),
  // Whether a checkpoint's upserts run on a thread of their own rather than the engine's (docs/engine.md, State writes).
  DMS_ENGINE_STATE_THREAD: bool.default(false),
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(10_000).default(6),
  KAFKA_TOPIC_REPLICATION: z.coerce.number().int().min(1).max(100).default(1),
  SCHEMA_REGISTRY_URL: optionalUrl,
  // Observations in OpenSearch instead of the database when set (docs/opensearch.md): the `store` role
  // indexes the observations topic, FIND and exports read OpenSearch.
  OPENSEARCH_URL: optionalUrl,
  // Indices are <prefix>-<thing type>-<period>; the index templates are named after the prefix too.
  OPENSEARCH_INDEX_PREFIX: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]*$/, "lower-case letters, digits, '.', '_' and '-', not starting with a symbol")
    .max(100)
    .default("dms-observations"),
  // How much time one index holds: a day (YYYY.MM.DD), a month (YYYY.MM) or a year (YYYY).
  OPENSEARCH_INDEX_PERIOD: z.enum(["day", "month", "year"]).default("day"),
  OPENSEARCH_INDEX_REPLICAS: z.coerce.number().int().min(0).max(10).default(1),
  // Observations the store role sends in one _bulk request at most.
  OPENSEARCH_BULK_SIZE: z.coerce.number().int().min(1).max(100_000).default(5000),
  // How long the store role waits for more observations to fill a _bulk request (0: sends what it has at once).
  OPENSEARCH_FLUSH_MS: z.coerce.number().int().min(0).max(60_000).default(200),
  MQTT_URL: optionalUrl,
  DMS_MQTT_PORT: port.default(1884),
  SMTP_URL: optionalUrl,
  SMTP_FROM: z.string().min(3).default("dms@localhost"),
  TWILIO_ACCOUNT_SID: z.string().min(1).optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  TWILIO_FROM: z.string().min(1).optional(),
  TWILIO_API_URL: optionalUrl,
  DMS_SMS_PER_SECOND: z.coerce.number().positive().default(1),
  DMS_WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  DMS_PROXY_CONTROL_PORT: port.default(8081),
  DMS_PROXY_DEVICE_PORT: port.default(7000),
  DMS_PROXY_PORTS: portRange.default({ first: 40000, last: 40999 }),
  DMS_PROXY_HOST: z.string().min(1).default("localhost"),
  DMS_OBSERVATION_RETENTION: retention,
  DMS_DEAD_LETTER_RETENTION: retention,
  DMS_EVENT_RETENTION: retention,
  DMS_JOB_EXECUTION_RETENTION: retention,
  DMS_ROLES: z
    .string()
    .default(ROLES.join(","))
    .transform((v) => v.split(",").map((r) => r.trim()))
    .pipe(z.array(z.enum(ROLES, { error: `expected a comma-separated subset of ${ROLES.join(",")}` })).min(1)),
});

type Env = z.output<typeof schema>;

export interface Config extends Omit<Env, "DMS_PUBLIC_URL" | "DMS_ROLES"> {
  DMS_PUBLIC_URL: string;
  roles: ReadonlySet<Role>;
  /** Generated rule ids carry the stack name unless this is false. */
  ruleIdPrefix: string;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`invalid configuration: ${variable}: ${detail}`);
  }
}

/** The variables of the `DMS_` family that dms reads; the test suite's own is known so that it does not stop a spawned service. */
const KNOWN_DMS = [...Object.keys(schema.shape).filter((k) => k.startsWith("DMS_")), "DMS_TEST_PG_URL"];

/**
 * Reads the configuration from environment variables. A bad value, or a
 * `DMS_*` variable dms does not know (a misspelt one would otherwise be
 * silently ignored), throws a ConfigError whose message is the one line the
 * operator needs.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const unknown = Object.keys(env)
    .filter((k) => k.startsWith("DMS_") && env[k] !== undefined && !KNOWN_DMS.includes(k))
    .sort()[0];
  if (unknown !== undefined) {
    throw new ConfigError(unknown, `not a setting of dms; did you mean ${nearest(unknown, KNOWN_DMS)}?`);
  }
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? "environment");
    throw new ConfigError(variable, `${issue.message} (got ${JSON.stringify(present[variable] ?? null)})`);
  }
  const { DMS_ROLES, DMS_PUBLIC_URL, ...rest } = parsed.data;
  return {
    ...rest,
    DMS_PUBLIC_URL: (DMS_PUBLIC_URL ?? `http://localhost:${rest.DMS_HTTP_PORT}`).replace(/\/$/, ""),
    roles: new Set(DMS_ROLES),
    ruleIdPrefix: rest.DMS_ENV === "production" ? "" : rest.DMS_STACK_NAME,
  };
}

/** The candidate fewest single-character edits away from `name` (Levenshtein distance). */
function nearest(name: string, candidates: readonly string[]): string {
  let best = candidates[0]!;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}

/** A random secret, for keys the operator did not set. */
export function randomSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** How dms creates a Kafka topic it uses when the cluster lacks it. */
export function topicLayout(config: Config): { partitions: number; replication: number } {
  return { partitions: config.KAFKA_TOPIC_PARTITIONS, replication: config.KAFKA_TOPIC_REPLICATION };
}
