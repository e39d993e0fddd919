/** The action types of a rule. */
export type ActionType = "WEBHOOK" | "EMAIL" | "SET_RESOURCE" | "SMS" | "EVENT";

/** One action a rule triggered, ready to be delivered. */
export interface TriggeredAction {
  /** (rule, thing, observation id, action index): duplicates by key are dropped. */
  idempotencyKey: string;
  ruleId: string;
  thingName: string;
  type: ActionType;
  /** The action config, its strings already substituted. */
  config: Record<string, unknown>;
  /** The rule engine payload (thing, observation, rule, timestamps). */
  payload: Record<string, unknown>;
  triggeredAt: number;
}

/**
 * Where the engine hands triggered actions. `accept` resolves once the actions
 * are durable (in the outbox); only then may the source commit its offsets.
 */
export interface ActionSink {
  accept(actions: readonly TriggeredAction[]): Promise<void>;
}
