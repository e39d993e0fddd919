import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThingTypesService, ThingsService } from "../../src/things/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";

/** The thing-type and thing operations made from their parts on SQLite (no service, no HTTP): their access rules. */

let parts: Parts;
let thingTypes: ThingTypesService;
let things: ThingsService;

beforeAll(async () => {
  parts = await openParts();
  thingTypes = new ThingTypesService(parts);
  things = new ThingsService(parts);
});
afterAll(() => parts.close());

describe("thing types: access checks in the service", () => {
  it("lists and reads only types of domains with ThingTypes.READ; MIC's read hides the others as not found", async () => {
    expect(thingTypes.list(parts.as("eastie")).map((t) => t.id)).toEqual(["20"]);
    expect(thingTypes.list(parts.as("alice"), "east").map((t) => t.id)).toEqual(["20"]);
    expect(await refusal(() => thingTypes.get(parts.as("eastie"), "10"))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => thingTypes.readable(parts.as("eastie"), "10"))).toBe("THING_TYPE_NOT_FOUND");
    expect(await refusal(() => thingTypes.get(parts.as("alice"), "99"))).toBe("THING_TYPE_NOT_FOUND");
  });

  it("CREATE needs ReadWrite and ThingTypes.CREATE; moving needs DELETE where it was and CREATE where it goes", async () => {
    const body = { id: "30", domain: "east", resources: [] };
    expect(await refusal(() => thingTypes.create(parts.as("reader"), body))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => thingTypes.create(parts.as("alice"), { ...body, domain: "nowhere" }))).toBe(
      "DOMAIN_NOT_FOUND",
    );
    expect((await thingTypes.create(parts.as("eastie"), body)).label).toBe("30");
    expect(await refusal(() => thingTypes.update(parts.as("eastie"), "30", { domain: "west" }))).toBe("NOT_AUTHORIZED");
    expect((await thingTypes.update(parts.as("alice"), "30", { domain: "west" })).domain).toBe("west");
    await thingTypes.delete(parts.as("alice"), "30");
    expect(parts.registry.thingType("30")).toBeUndefined();
  });
});

describe("things: access checks in the service", () => {
  it("CREATE needs Things.CREATE on the domain and a type the caller may read", async () => {
    const body = { thingName: "n1", thingType: "10", domain: "east" };
    expect(await refusal(() => things.create(parts.as("eastie"), body))).toBe("THING_TYPE_NOT_FOUND");
    expect(await refusal(() => things.create(parts.as("reader"), body))).toBe("NOT_AUTHORIZED");
    expect(
      await refusal(() => things.create(parts.as("alice"), { ...body, secret: "abcd", generateSecret: true })),
    ).toBe("INVALID_ARGUMENTS");
    const made = await things.create(parts.as("alice"), { ...body, generateSecret: true });
    expect(made.status).toBe("created");
    expect(made.secret).toBeDefined();
    expect(things.get(parts.as("eastie"), "n1").domain).toBe("east");
  });

  it("a bulk write refuses each thing on its own: the others are written", async () => {
    const outcomes = await things.bulkCreate(parts.as("eastie"), [
      { thingName: "n2", thingType: "20", domain: "east" },
      { thingName: "n3", thingType: "20", domain: "acme" },
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["created", "failed"]);
    const updates = await things.bulkUpdate(parts.as("eastie"), [
      { thingName: "n2", label: "second" },
      { thingName: "t1", label: "not eastie's" },
      { thingName: "ghost", label: "none" },
    ]);
    expect(updates.map((o) => (o.status === "failed" ? o.error.key : o.status))).toEqual([
      "updated",
      "NOT_AUTHORIZED",
      "THING_NOT_FOUND",
    ]);
    expect(things.list(parts.as("eastie")).map((t) => t.thingName)).toEqual(["e1", "n1", "n2"]);
  });

  it("moving a thing needs DELETE where it was and CREATE where it goes; DELETE needs Things.DELETE", async () => {
    expect(await refusal(() => things.update(parts.as("eastie"), "n2", { domain: "west" }))).toBe("NOT_AUTHORIZED");
    expect((await things.update(parts.as("alice"), "n2", { domain: "west" })).thing.domain).toBe("west");
    expect(await refusal(() => things.delete(parts.as("eastie"), "n2"))).toBe("NOT_AUTHORIZED");
    await things.delete(parts.as("alice"), "n2");
    expect(parts.registry.thing("n2")).toBeUndefined();
  });
});
