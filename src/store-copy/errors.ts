/** Why a copy was refused or stopped: the one line the operator needs (the command exits 1 with it). */
export class StoreCopyError extends Error {}
