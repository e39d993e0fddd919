import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThingGroupsService } from "../../src/things/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";

/** The thing-group access rules, checked on the service made from its parts (no running dms, no HTTP). */

let parts: Parts;
let groups: ThingGroupsService;

beforeAll(async () => {
  parts = await openParts({
    users: [
      // Groups of acme, and the things of east only.
      {
        userName: "grouper",
        password: "grouper-pw",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["ThingGroups.*"], east: ["Things.READ"] },
      },
    ],
    thingGroups: [{ id: "mixed", name: "mixed", domain: "acme", things: ["t1", "e1"] }],
  });
  groups = new ThingGroupsService(parts);
});
afterAll(() => parts.close());

describe("thing groups: access checks in the service", () => {
  it("a group shows only the members the caller may read", async () => {
    expect(groups.get(parts.as("admin"), "mixed").things.sort()).toEqual(["e1", "t1"]);
    expect(groups.get(parts.as("grouper"), "mixed").things).toEqual(["e1"]);
    expect(groups.list(parts.as("grouper")).find((g) => g.id === "mixed")?.things).toEqual(["e1"]);
  });

  it("another domain's group cannot be read, and LIST leaves it out", async () => {
    expect(await refusal(() => groups.get(parts.as("eastie"), "mixed"))).toBe("NOT_AUTHORIZED");
    expect(groups.list(parts.as("eastie")).map((g) => g.id)).not.toContain("mixed");
  });

  it("a thing the caller cannot read can be neither added nor removed: to it, it is not there", async () => {
    const grouper = parts.as("grouper");
    expect(await refusal(() => groups.addThings(grouper, "mixed", ["t2"]))).toBe("THING_NOT_FOUND");
    expect(await refusal(() => groups.removeThing(grouper, "mixed", "t1"))).toBe("THING_NOT_FOUND");
    expect(groups.get(parts.as("admin"), "mixed").things.sort()).toEqual(["e1", "t1"]);
    expect(await refusal(() => groups.create(grouper, { id: "g-new", domain: "acme", things: ["t2"] }))).toBe(
      "THING_NOT_FOUND",
    );
  });

  it("moving a group needs DELETE where it was and CREATE where it goes; a Read user changes nothing", async () => {
    // ThingGroups.* on acme holds on east below it, not on other beside it.
    expect(await refusal(() => groups.update(parts.as("grouper"), "mixed", { domain: "other" }))).toBe(
      "NOT_AUTHORIZED",
    );
    expect((await groups.update(parts.as("grouper"), "mixed", { domain: "east" })).domain).toBe("east");
    expect(await refusal(() => groups.update(parts.as("alice"), "mixed", { domain: "nowhere" }))).toBe(
      "DOMAIN_NOT_FOUND",
    );
    expect(await refusal(() => groups.delete(parts.as("reader"), "mixed"))).toBe("NOT_AUTHORIZED");
    expect((await groups.update(parts.as("admin"), "mixed", { domain: "other" })).domain).toBe("other");
    expect(await refusal(() => groups.get(parts.as("grouper"), "mixed"))).toBe("NOT_AUTHORIZED");
  });
});
