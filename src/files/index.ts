export {
  Files,
  createFiles,
  MAX_UPLOAD_BYTES,
  type FilesDeps,
  type FileEntry,
  type ListResponse,
  type FolderSelector,
  type UploadHeaders,
} from "./service.js";
export { LocalFileStore, type LocalFileStoreOptions } from "./local-store.js";
export { SqliteFileMetadataStore } from "./sqlite-store.js";
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
export { filesMigrations } from "./migrations.js";
