// The entry of a FIND planning thread of the OpenSearch runner (plain JavaScript: see ../load-thread.mjs).
import { loadThread } from "../load-thread.mjs";

const { planTask } = await loadThread("plan-worker", import.meta.url);

export default planTask;
