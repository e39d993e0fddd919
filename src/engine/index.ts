export * from "./types.js";
export type { Observation, NestedObservation, RawObservation, SourcePosition } from "./types.js";
export type { ObservationSource } from "./sources/source.js";
export type { StateStore, ThingState, ThresholdState } from "./state/index.js";
export type { ObservationIngest } from "./ingest.js";
export type { ActionSink, RulePayload, TriggeredAction } from "./sink.js";
export {
  decodeBytes,
  // The JSON.parse path alone, which decodeBytes falls back to: the reference for tests and benches.
  decodeBytesByJsonParse,
  decodeDevicePayload,
  decodeMessages,
  decodeValue,
  decodeWireMessages,
  type DecodedObservation,
  type DecodeOptions,
  type Ingested,
  type Refusal,
  type WireDecoder,
} from "./decode.js";
export { scanObservation } from "./fast-decode.js";
export {
  compileRule,
  RuleCompileError,
  readGeoPoint,
  type CompiledRule,
  type CompileOptions,
  type ExpressionMode,
  // The whitelisted expression compiler, which action templates share, and its bounded cache.
  compileScopeExpression,
  readPath,
  generatedCacheSize,
  GENERATED_CACHE_MAX,
  GENERATED_CACHE_MAX_BYTES,
  EXPRESSION_MAX_LENGTH,
  type ScopeExpression,
} from "./compile/index.js";
export { evaluateRule, type DryRunInput, type DryRunResult } from "./evaluate.js";
export {
  RuleEngine,
  RewoundError,
  type BatchResult,
  type HandledBatch,
  type EngineOptions,
  type Rejected,
} from "./engine.js";
export { deadLetter, observationId, wrongTypeOf } from "./checks.js";
export { MemoryStateStore, PgStateStore, SqliteStateStore, stateMigrations, statePgMigrations } from "./state/index.js";
export {
  SqliteDeadLetterStore,
  PgDeadLetterStore,
  deadLetterMigrations,
  deadLetterPgMigrations,
  DEAD_LETTER_REASONS,
  MAX_DEAD_LETTER_PAYLOAD,
  type DeadLetterReason,
  type DeadLetter,
  type DeadLetterStore,
  type StoredDeadLetter,
} from "./dead-letters/index.js";
export { resourceChecks, type ThingInfo, type ThingResolver } from "./things.js";
export { createEngineService, engineMigrations, streamDecoder, type EngineService } from "./service.js";
export { KafkaObservationSource, type KafkaSourceOptions } from "./sources/kafka.js";
export { chunkDecoder, engineFeed, type ChunkDecoder } from "./feed.js";
export { HttpObservationSource, type HttpIngestResult } from "./sources/http.js";
export { deviceIngest, MqttObservationSource, type DeviceIngestOptions, type DevicePublishes } from "./sources/mqtt.js";
export { GroupCommit, type GroupCommitOptions } from "./sources/group-commit.js";
