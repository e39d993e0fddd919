/**
 * bench/fleet: the fleet-scale benchmarks of issue 18, each runnable alone; this runs them in turn.
 * `npx tsx bench/fleet/index.ts` (or `npm run bench -- fleet`).
 */
import { benchIngest } from "./ingest.js";

await benchIngest();
process.exit(0);
