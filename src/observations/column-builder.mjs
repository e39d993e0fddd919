// The entry of the column cache builder thread. Plain JavaScript, so that it starts the same under
// tsx, vitest and plain node: it loads the TypeScript through tsx's loader.
import { tsImport } from "tsx/esm/api";

await tsImport("./columns-thread.ts", import.meta.url);
