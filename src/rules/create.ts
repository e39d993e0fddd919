import type { Identity } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import type { ThingRegistry } from "../things/index.js";
import { RulesService } from "./service.js";
import type { RuleStore } from "./store.js";

export interface RulesDeps {
  /** Where rules are kept (its generated ids carry `DMS_STACK_NAME`'s prefix). */
  store: RuleStore;
  bus: EventBus;
  identity: Identity;
  registry: ThingRegistry;
  allowPrivateWebhooks: boolean;
}

/** The rules capability: the rules as stored and the operations (the engine's process adds a `RuleCache`). */
export interface Rules {
  store: RuleStore;
  service: RulesService;
}

export function createRules({ store, bus, identity, registry, allowPrivateWebhooks }: RulesDeps): Rules {
  return { store, service: new RulesService({ store, bus, identity, registry, allowPrivateWebhooks }) };
}
