export {
  ObservationStore,
  observationMigrations,
  type ObservationDocument,
  type StoredObservationInput,
  type StoredObservationRow,
} from "./store.js";
