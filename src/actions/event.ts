import { z } from "zod";
import { CLASSIFICATIONS } from "../events/index.js";
import { DEFAULT_RETRY, defineAction } from "./action.js";

const EventConfig = z.object({
  acknowledgmentRequired: z.boolean().optional(),
  classification: z.enum(CLASSIFICATIONS),
  message: z.string(),
});
export type EventConfig = z.infer<typeof EventConfig>;

export const eventAction = defineAction<EventConfig>({
  type: "EVENT",
  schema: () => EventConfig,
  retry: () => DEFAULT_RETRY,
  create: ({ events, publisher }) => {
    return async ({ config: c, payload, idempotencyKey, ruleId }) => {
      const { event } = await events.insert({
        idempotencyKey,
        ruleId,
        category: payload.rule.category,
        thingName: payload.thing.thingName,
        thingType: payload.thing.thingType,
        domain: payload.thing.domain,
        classification: c.classification,
        message: String(c.message),
        acknowledgmentRequired: c.acknowledgmentRequired === true,
        time: payload.timestamp,
      });
      // Produced again on a retry: at-least-once on the topic, exactly once in the store.
      await publisher.publish(event);
    };
  },
});
