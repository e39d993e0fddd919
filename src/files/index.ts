export {
  Files,
  MAX_UPLOAD_BYTES,
  type FileEntry,
  type ListResponse,
  type FolderSelector,
  type UploadHeaders,
} from "./service.js";
export { LocalFileStore, localBlobPath, type LocalFileStoreOptions } from "./local-store.js";
export { SqliteFileMetadataStore } from "./sqlite-store.js";
export { PgFileMetadataStore } from "./pg-store.js";
export { PgFileStore, FILE_CHUNK_BYTES, type PgFileStoreOptions } from "./pg-file-store.js";
export {
  PutError,
  type FileStore,
  type FileMetadataStore,
  type NewFileVersion,
  type FileVersion,
  type ListQuery,
  type PutOptions,
  type ByteRange,
} from "./store.js";
export {
  FOLDERS,
  MAX_NAME_BYTES,
  TRANSFER_PREFIX,
  checkFileName,
  keyOf,
  parseKey,
  transferPath,
  keyOfTransferPath,
  type Folder,
  type FileLocation,
} from "./keys.js";
export { filesMigrations, filesPgMigrations } from "./migrations.js";
export { createFiles, type FilesDeps } from "./create.js";
