import type { Provision } from "../../src/provision/index.js";
import { BASE_PROVISION } from "../support/dms.js";
import type { Payload } from "../support/http.js";

/** The base cast plus users whose privileges split a rule move between two domains. */
export const RULES_PROVISION: Provision = {
  ...BASE_PROVISION,
  users: [
    ...(BASE_PROVISION.users ?? []),
    {
      userName: "mover",
      password: "mover-pw",
      role: "ReadWrite",
      homeDomain: "east",
      privileges: {
        east: ["Rules.*", "ThingTypes.READ", "Domains.READ"],
        west: ["Rules.CREATE", "Domains.READ"],
      },
    },
    {
      userName: "updater",
      password: "updater-pw",
      role: "ReadWrite",
      homeDomain: "east",
      privileges: {
        east: ["Rules.READ", "Rules.UPDATE", "ThingTypes.READ", "Domains.READ"],
        west: ["Rules.CREATE", "Domains.READ"],
      },
    },
    { userName: "nobody", password: "nobody-pw", role: "ReadWrite", homeDomain: "other", privileges: {} },
  ],
};

/** A valid rule body on thing type 10 in acme; `over` replaces top-level fields. */
export function ruleBody(over: Record<string, unknown> = {}): Payload {
  return {
    name: "hot",
    enabled: true,
    filter: { domain: "acme", thingType: "10" },
    expression: [{ operator: "gt", resource: "temp", value: 30 }],
    threshold: { count: 1, interval: 0 },
    actions: [{ type: "EVENT", config: { classification: "ALARM", message: "hot ${thing.thingName}" } }],
    ...over,
  };
}

export const webhook = (config: Record<string, unknown>): Payload => ({
  type: "WEBHOOK",
  config: { uri: "https://hooks.example.com/x", body: "{}", ...config },
});
