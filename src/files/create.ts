import type { Identity } from "../auth/index.js";
import type { UrlSigner } from "../signing/index.js";
import type { ThingRegistry } from "../things/index.js";
import { Files } from "./service.js";
import type { FileStore } from "./store.js";

export interface FilesDeps {
  /** Where the files' contents and metadata are kept (chosen in the wiring: local disk or the database). */
  store: FileStore;
  /** Signs the `/storage/files/...` URLs. */
  signer: UrlSigner;
  /** The things and thing types that own folders. */
  registry: ThingRegistry;
  identity: Pick<Identity, "domains">;
}

/** The file operations over the given store (`LocalFileStore` or `PgFileStore`). */
export function createFiles({ store, signer, registry, identity }: FilesDeps): Files {
  return new Files(store, signer, registry, identity);
}
