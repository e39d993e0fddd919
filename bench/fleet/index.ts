/**
 * bench/fleet: what a fleet of devices costs around the engine. Each section
 * is a file of its own and writes its own part of bench/RESULTS.md
 * (`fleet-<section>`), so that sections run alone or together:
 *
 *   npx tsx bench/fleet/index.ts [--only provisioning,provisioning-postgres,connect-storm] [--things 100000]
 *     [--devices 10000] [--secrets chosen|generated] [--client-processes 4] [--rounds 2]
 *     [--publishers 1000] [--seconds 10]
 *     [--old 1000000]
 *
 * To add a section: a file exporting an async function that answers its
 * Markdown, and one entry in SECTIONS.
 */
import { writeSection } from "../results.js";
import { connectStormSection } from "./connect-storm.js";
import { ingestSection } from "./ingest.js";
import { provisioningSection } from "./provisioning.js";
import { retentionSection } from "./retention.js";
import { argument, machine, type SecretKind } from "./support.js";

const THINGS = Number(argument("--things") ?? 100_000);
const DEVICES = Number(argument("--devices") ?? 10_000);
/** The devices of the connect storm and of ingest: operator-supplied secrets by default, the costlier kind to check. */
const SECRETS: SecretKind = argument("--secrets") === "generated" ? "generated" : "chosen";
const CLIENT_PROCESSES = Number(argument("--client-processes") ?? 4);
const ROUNDS = Number(argument("--rounds") ?? 2);
const PUBLISHERS = Number(argument("--publishers") ?? 1000);
const SECONDS = Number(argument("--seconds") ?? 10);
const OLD = Number(argument("--old") ?? 1_000_000);

interface Section {
  name: string;
  title: string;
  /** The flags that rerun it as measured. */
  flags: string;
  run(): Promise<string>;
}

const SECTIONS: Section[] = [
  {
    name: "provisioning",
    title: `provisioning ${THINGS.toLocaleString("en")} things with and without secrets, and a restart`,
    flags: `--only provisioning --things ${THINGS} --rounds ${ROUNDS}`,
    run: () => provisioningSection(THINGS, ROUNDS),
  },
  {
    name: "provisioning-postgres",
    title: `provisioning ${THINGS.toLocaleString("en")} things with every store on PostgreSQL, and a restart`,
    flags: `--only provisioning-postgres --things ${THINGS} --rounds ${ROUNDS}`,
    run: () => provisioningSection(THINGS, ROUNDS, "postgres"),
  },
  {
    name: "connect-storm",
    title: `a connect storm of ${DEVICES.toLocaleString("en")} devices with ${SECRETS} secrets, dms against Mosquitto`,
    flags: `--only connect-storm --devices ${DEVICES} --secrets ${SECRETS} --client-processes ${CLIENT_PROCESSES} --rounds ${ROUNDS}`,
    run: () => connectStormSection(DEVICES, CLIENT_PROCESSES, ROUNDS, SECRETS),
  },
  {
    name: "ingest",
    title: `MQTT ingest of ${PUBLISHERS.toLocaleString("en")} devices with ${SECRETS} secrets publishing QoS 1, dms against Mosquitto's relay`,
    flags: `--only ingest --publishers ${PUBLISHERS} --secrets ${SECRETS} --client-processes ${CLIENT_PROCESSES} --seconds ${SECONDS} --rounds ${ROUNDS}`,
    run: () => ingestSection(PUBLISHERS, CLIENT_PROCESSES, SECONDS, ROUNDS, SECRETS),
  },
  {
    name: "retention",
    title: "engine rate with retention deletion running, and disk per million observations",
    flags: `--only retention --old ${OLD} --seconds ${SECONDS} --rounds ${ROUNDS}`,
    run: () => retentionSection(OLD, SECONDS, ROUNDS),
  },
];

async function main(): Promise<void> {
  const only = argument("--only")?.split(",");
  for (const section of SECTIONS.filter((s) => !only || only.includes(s.name))) {
    console.log(`\n=== bench/fleet: ${section.name} ===`);
    const before = machine();
    const started = new Date().toISOString();
    const body = await section.run();
    const text = [
      `## bench/fleet: ${section.title}`,
      "",
      `- machine at start: ${before}`,
      `- machine at end: ${machine()}`,
      `- ${started}; rerun: \`npx tsx bench/fleet/index.ts ${section.flags}\``,
      "",
      body,
    ].join("\n");
    console.log(text);
    writeSection(`fleet-${section.name}`, text);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
