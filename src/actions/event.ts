import { z } from "zod";
import { CLASSIFICATIONS } from "../events/index.js";
import { databaseFault } from "../store/index.js";
import { DEFAULT_RETRY, Deferred, defineAction } from "./action.js";

/** How long an event waits before it is tried again when its store's database did not answer. */
const DATABASE_AWAY_RETRY_MS = 2000;

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
  create: ({ events, publisher, timers }) => {
    return async ({ config: c, payload, idempotencyKey, ruleId }) => {
      const { event } = await events
        .insert({
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
        })
        .catch((err: unknown) => {
          // The event store's database away is no failure of the action: it waits without using an attempt.
          if (databaseFault(err) === "unreachable") throw new Deferred(timers.now() + DATABASE_AWAY_RETRY_MS);
          throw err;
        });
      // Produced again on a retry: at-least-once on the topic, exactly once in the store.
      await publisher.publish(event);
    };
  },
});
