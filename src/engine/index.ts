export * from "./types.js";
export type { Observation, NestedObservation, RawObservation, SourcePosition } from "./types.js";
export type { ObservationSource } from "./source.js";
export type { StateStore, ThingState, ThresholdState } from "./state.js";
export type { ObservationIngest } from "./ingest.js";
export type { ActionSink, RulePayload, TriggeredAction } from "./sink.js";
export {
  compileRule,
  compileScopeExpression,
  readPath,
  RuleCompileError,
  readGeoPoint,
  type ScopeExpression,
  type CompiledRule,
  type CompileOptions,
  type ExpressionMode,
} from "./compile/index.js";
export { evaluateRule, type DryRunInput, type DryRunResult } from "./evaluate.js";
export { RuleEngine, type BatchResult, type EngineOptions, type Rejected } from "./engine.js";
export { MemoryStateStore, SqliteStateStore, stateMigrations } from "./state/index.js";
export {
  DeadLetterStore,
  deadLetterMigrations,
  DEAD_LETTER_REASONS,
  type DeadLetter,
  type StoredDeadLetter,
} from "./dead-letters.js";
export { resourceChecks, type ThingInfo, type ThingResolver } from "./things.js";
export { createEngineService, engineMigrations, type EngineService } from "./service.js";
export { KafkaObservationSource, type KafkaSourceOptions } from "./sources/kafka.js";
export { kafkaIngest, type KafkaIngest, type DeviceItems } from "./sources/kafka-ingest.js";
export { GroupCommit, type GroupCommitOptions } from "./sources/group-commit.js";
