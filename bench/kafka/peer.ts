/**
 * The @platformatic/kafka consumer bench/kafka measures against, installed into bench/kafka/peer on
 * first use (bench/kafka/peer/package.json says why it is not a dependency of the project).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const PEER = fileURLToPath(new URL("./peer/", import.meta.url));
const ENTRY = `${PEER}node_modules/@platformatic/kafka/dist/index.js`;

/** The part of @platformatic/kafka's consumer the bench uses. */
export interface PlatformaticConsumer {
  consume(options: {
    autocommit: boolean;
    topics: string[];
    mode: "earliest";
    maxBytes: number;
  }): Promise<{ on(event: "data", listener: () => void): void; close(): Promise<void> }>;
  close(force: boolean): Promise<void>;
}
export type PlatformaticConsumerClass = new (options: {
  groupId: string;
  clientId: string;
  bootstrapBrokers: string[];
}) => PlatformaticConsumer;

/** Installs the peer when it is not there yet (npm may warn about its Node 22 engines then), and loads it. */
export async function platformaticConsumer(): Promise<PlatformaticConsumerClass> {
  if (!existsSync(ENTRY)) {
    console.log("bench/kafka: installing @platformatic/kafka into bench/kafka/peer (first run only)");
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--no-package-lock"], { cwd: PEER, stdio: "inherit" });
  }
  const module = (await import(pathToFileURL(ENTRY).href)) as { Consumer: PlatformaticConsumerClass };
  return module.Consumer;
}
