import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * V8's gc(), without having to start the process with --expose-gc: a benchmark calls it between
 * phases so that what one phase left on the heap is not collected inside the next one's timing.
 */
export const fullGc = ((): (() => void) => {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
})();
