// The entry of the column cache builder thread (plain JavaScript: see ../load-thread.mjs).
import { loadThread } from "../load-thread.mjs";

await loadThread("columns-thread", import.meta.url);
