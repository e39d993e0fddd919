import { ConfigError, loadConfig } from "./config/index.js";
import { startDms } from "./service.js";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`dms: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
  const dms = await startDms(config);
  const stop = (signal: string): void => {
    dms.services.logger.info({ signal }, "stopping");
    dms.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((err: unknown) => {
  console.error(`dms: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
