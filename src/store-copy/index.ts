export { copyStore, CountMismatchError, type StoreCopyOptions, type StoreCopyReport } from "./copy.js";
export { formatCounts, type TableCount } from "./counts.js";
export { StoreCopyError } from "./errors.js";
