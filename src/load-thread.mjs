// Loads a thread's code from beside its plain JavaScript entry, so that the entry starts the same under
// tsx, vitest and plain node: the compiled JavaScript when it is there (dist/), else the TypeScript
// through tsx's loader, whatever loader (if any) the process that spawned the thread runs with.
import { existsSync } from "node:fs";
import { fileURLToPath, URL } from "node:url";

/** `name` is the module's path beside `entryUrl`, without extension. */
export async function loadThread(name, entryUrl) {
  const compiled = new URL(`./${name}.js`, entryUrl);
  if (existsSync(fileURLToPath(compiled))) return import(compiled.href);
  const { tsImport } = await import("tsx/esm/api");
  return tsImport(`./${name}.ts`, entryUrl);
}
