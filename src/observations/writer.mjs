// The entry of the observation writer thread (plain JavaScript: see ../load-thread.mjs).
import { loadThread } from "../load-thread.mjs";

await loadThread("writer-thread", import.meta.url);
