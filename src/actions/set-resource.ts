import { z } from "zod";
import type { Observation } from "../engine/index.js";
import { DEFAULT_RETRY, defineAction } from "./action.js";

/** Nested types the platform owns: a rule cannot set them. */
export const RESERVED_TYPES = ["platform", "untyped"] as const;

/** `<resource>` or `<nestedType>.<resource>`; no `${...}`: the loop check must know what is written. */
const RESOURCE = /^(?:[A-Za-z0-9_-]+\.)?[A-Za-z0-9_:-]+$/;

const SetResourceConfig = z.object({
  resource: z.string().regex(RESOURCE, "a resource name or <type>.<resource>"),
  value: z.union([z.string(), z.number(), z.boolean()]),
});
export type SetResourceConfig = z.infer<typeof SetResourceConfig>;

export function splitResource(resource: string): { type?: string; name: string } {
  const dot = resource.indexOf(".");
  return dot < 0 ? { name: resource } : { type: resource.slice(0, dot), name: resource.slice(dot + 1) };
}

export const setResourceAction = defineAction<SetResourceConfig>({
  type: "SET_RESOURCE",
  schema: () =>
    SetResourceConfig.superRefine((c, ctx) => {
      const { type } = splitResource(c.resource);
      if (type !== undefined && (RESERVED_TYPES as readonly string[]).includes(type)) {
        ctx.addIssue({ code: "custom", path: ["resource"], message: `type ${type} is reserved and cannot be set` });
      }
    }),
  retry: () => DEFAULT_RETRY,
  create: ({ ingest, timers }) => {
    return async ({ config: c, payload }) => {
      const feed = ingest();
      if (!feed)
        throw new Error(
          "no rule engine runs in this process and KAFKA_BROKERS is unset: nothing takes the SET_RESOURCE change",
        );
      const { type, name } = splitResource(c.resource);
      const observation: Observation = { thingName: payload.thing.thingName, timestamp: timers.now(), state: {} };
      if (type === undefined) observation.state[name] = c.value;
      // A nested object without id stands for every nested object of its type: the engine's state merge
      // sets the resource on all of them, which is what `<type>.<resource>` means.
      else observation.nested = [{ type, state: { [name]: c.value } }];
      await feed([observation], "set-resource");
    };
  },
});
