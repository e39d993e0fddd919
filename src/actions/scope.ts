import type { RulePayload } from "../engine/index.js";
import type { Scope } from "./template.js";

/**
 * What `${...}` sees: the payload as it is, plus `observation.<name>` for
 * the observation's values (as rule expressions write them). `id`,
 * `timestamp`, `state` and `nested` of the observation win over a resource
 * of the same name.
 */
export function payloadScope(payload: RulePayload): Scope {
  return {
    rule: payload.rule,
    thing: payload.thing,
    observation: { ...payload.observation.state, ...payload.observation },
    timestamp: payload.timestamp,
    isoTimestamp: payload.isoTimestamp,
  };
}
