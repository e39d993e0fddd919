// The entry of the Kafka fetch thread. Plain JavaScript, so that it starts the same under tsx,
// vitest and plain node: it loads the TypeScript thread through tsx's loader.
import { tsImport } from "tsx/esm/api";

await tsImport("./kafka-fetch-thread.ts", import.meta.url);
