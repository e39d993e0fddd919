// The entry of the engine state writer thread (plain JavaScript: see ../../load-thread.mjs).
import { loadThread } from "../../load-thread.mjs";

await loadThread("writer-thread", import.meta.url);
