// The entry of a FIND worker thread. Plain JavaScript, so that it starts the same under tsx, vitest
// and plain node: it loads the TypeScript task through tsx's loader, whatever loader (if any) the
// process that spawned the thread runs with.
import { tsImport } from "tsx/esm/api";

const { runFindTask } = await tsImport("./worker.ts", import.meta.url);

export default runFindTask;
