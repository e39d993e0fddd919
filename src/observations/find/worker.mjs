// The entry of a FIND worker thread (plain JavaScript: see ../../load-thread.mjs).
import { loadThread } from "../../load-thread.mjs";

const { runFindTask } = await loadThread("worker", import.meta.url);

export default runFindTask;
