/**
 * Set up in every fast test (vitest.config.ts): a fast test that starts a child process or connects
 * to a service of the slow tier fails at once, naming the rule in test/tiers.ts that should have
 * put it in the slow tier.
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

/** The default ports of the services only slow tests may use: Kafka, PostgreSQL, OpenSearch, Mosquitto, the schema registry. */
const SLOW_PORTS = new Map([
  [9092, "Kafka"],
  [5432, "PostgreSQL"],
  [9200, "OpenSearch"],
  [9250, "OpenSearch"],
  [1883, "Mosquitto"],
  [8085, "a schema registry"],
]);

function refuse(what: string): never {
  throw new Error(
    `a fast test needs ${what}: test/tiers.ts should list what names it, so the file runs in the slow tier`,
  );
}

for (const name of ["spawn", "spawnSync", "fork", "exec", "execSync", "execFile", "execFileSync"] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`a child process (${name})`), writable: true });
}
syncBuiltinESMExports();

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]): net.Socket {
  // net.connect passes its normalized arguments as one array.
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  const port = typeof first === "object" && first !== null ? Number((first as { port?: unknown }).port) : Number(first);
  const service = SLOW_PORTS.get(port);
  if (service !== undefined) refuse(`${service} (port ${port})`);
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof connect;
