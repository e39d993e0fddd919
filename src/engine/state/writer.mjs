// The entry of the engine state writer thread. Plain JavaScript, so that it starts the same under
// tsx, vitest and plain node: it loads the TypeScript writer through tsx's loader.
import { tsImport } from "tsx/esm/api";

await tsImport("./writer-thread.ts", import.meta.url);
