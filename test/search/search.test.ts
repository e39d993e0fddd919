import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";

/** The base tree plus Las Vegas below west, two more thing types, and users with partial privileges. */
const PROVISION = {
  ...BASE_PROVISION,
  domains: [...BASE_PROVISION.domains!, { id: "lv", parent: "west", label: "Las Vegas" }],
  thingTypes: [
    ...BASE_PROVISION.thingTypes!,
    {
      id: "30",
      label: "Sensor",
      domain: "west",
      resources: [
        { name: "vegetation", dataType: "string" as const, resourceType: "virtual" as const },
        { name: "battery", dataType: "long" as const, resourceType: "sub-thing" as const },
      ],
    },
    {
      id: "40",
      label: "Lamp",
      domain: "other",
      resources: [{ name: "lamp_state", dataType: "boolean" as const, resourceType: "platform" as const }],
    },
  ],
  users: [
    ...BASE_PROVISION.users!,
    {
      userName: "typesonly",
      password: "typesonly-pw",
      role: "Read" as const,
      homeDomain: "acme",
      privileges: { acme: ["ThingTypes.READ"] },
    },
    {
      userName: "westie",
      password: "westie-pw",
      role: "Read" as const,
      homeDomain: "west",
      privileges: { west: ["Domains.READ"], lv: ["ThingTypes.READ"] },
    },
  ],
};

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms({ provision: PROVISION });
});
afterAll(() => t.close());

const search = async (body: unknown, user = "admin") => {
  const res = await t.call("POST", "/search", { user, body });
  return { status: res.status, body: (await json(res)) as Payload };
};
const ids = async (body: unknown, user = "admin"): Promise<string[]> => {
  const { status, body: answer } = await search(body, user);
  expect(status, JSON.stringify(answer)).toBe(200);
  return answer.hits.hits.map((h: Payload) => h._source.id);
};

const ALL_DOMAINS = ["root", "acme", "east", "west", "other", "lv"];
const ALL_RESOURCES = ["10/latlng", "10/temp", "20/power", "30/battery", "30/vegetation", "40/lamp_state"];

describe("matching: prefix words", () => {
  it("`La` matches Las Vegas (and words starting with la), `veg` matches Las Vegas and vegetation", async () => {
    expect((await ids({ term: "La" })).sort()).toEqual(["10/latlng", "40/lamp_state", "lv"].sort());
    expect((await ids({ term: "veg" })).sort()).toEqual(["30/vegetation", "lv"]);
  });

  it("a middle fragment such as `gas` matches nothing", async () => {
    const { body } = await search({ term: "gas" });
    expect(body.hits).toEqual({ total: 0, max_score: null, hits: [] });
  });

  it("every word of the term must start a word: `las veg` matches, `las gas` does not", async () => {
    expect(await ids({ term: "las veg" })).toEqual(["lv"]);
    expect(await ids({ term: "las gas" })).toEqual([]);
  });

  it("is case- and accent-insensitive and matches the id too", async () => {
    expect(await ids({ term: "VÉG", filter: { type: "domain" } })).toEqual(["lv"]);
    expect((await ids({ term: "30" })).sort()).toEqual(["30/battery", "30/vegetation"]);
  });

  it("an empty term matches everything the caller may see", async () => {
    const { body } = await search({ term: "" });
    expect(body.hits.total).toBe(ALL_DOMAINS.length + ALL_RESOURCES.length);
    expect(body.hits.hits.map((h: Payload) => h._source.id).sort()).toEqual([...ALL_DOMAINS, ...ALL_RESOURCES].sort());
  });

  it("answers the search-engine shape with domain and resource hits", async () => {
    const { body } = await search({ term: "las" });
    expect(body).toMatchObject({ timed_out: false, hits: { total: 1, max_score: expect.any(Number) } });
    expect(body.hits.hits[0]).toEqual({
      _index: "dms-search",
      _type: "domain",
      _id: "lv",
      _score: expect.any(Number),
      _source: {
        id: "lv",
        label: "Las Vegas",
        metadata: { parent: "west", path: "root/acme/west/lv" },
        searchType: "domain",
      },
    });
    const resource = (await search({ term: "batt" })).body.hits.hits[0];
    expect(resource._source).toEqual({
      id: "30/battery",
      label: "battery",
      metadata: { dataType: "long", resourceType: "sub-thing", thingType: "30" },
      searchType: "resource",
    });
  });
});

describe("filters", () => {
  it("type limits to domains or resources", async () => {
    expect((await ids({ term: "", filter: { type: "domain" } })).sort()).toEqual([...ALL_DOMAINS].sort());
    expect((await ids({ term: "", filter: { type: "resource" } })).sort()).toEqual(ALL_RESOURCES);
  });

  it("dataType, thingType and resourceType select resources only", async () => {
    expect((await ids({ term: "", filter: { dataType: "long" } })).sort()).toEqual([
      "10/temp",
      "20/power",
      "30/battery",
    ]);
    expect((await ids({ term: "", filter: { thingType: "10" } })).sort()).toEqual(["10/latlng", "10/temp"]);
    expect(await ids({ term: "", filter: { resourceType: "virtual" } })).toEqual(["30/vegetation"]);
    expect(await ids({ term: "", filter: { resourceType: "platform" } })).toEqual(["40/lamp_state"]);
    expect(await ids({ term: "", filter: { type: "domain", dataType: "long" } })).toEqual([]);
    expect(await ids({ term: "l", filter: { thingType: "10", dataType: "geo_point" } })).toEqual(["10/latlng"]);
  });

  it("topDomain keeps the domain and its sub-domains, and resources of thing types in them", async () => {
    const west = ["30/battery", "30/vegetation", "lv", "west"];
    expect((await ids({ term: "", filter: { topDomain: "west" } })).sort()).toEqual(west);
    expect((await ids({ term: "", filter: { topDomain: "root/acme/west" } })).sort()).toEqual(west);
    expect((await ids({ term: "", filter: { topDomain: "acme", type: "domain" } })).sort()).toEqual([
      "acme",
      "east",
      "lv",
      "west",
    ]);
  });
});

describe("paging and sorting", () => {
  it("size and from page through all hits without overlap; total stays the whole count", async () => {
    const seen: string[] = [];
    for (let from = 0; from < 12; from += 5) {
      const { body } = await search({ term: "", size: 5, from });
      expect(body.hits.total).toBe(12);
      seen.push(...body.hits.hits.map((h: Payload) => h._source.id));
    }
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
  });

  it("size defaults to 100 and size 0 answers only the total", async () => {
    const { body } = await search({ term: "", size: 0 });
    expect(body.hits).toMatchObject({ total: 12, hits: [] });
  });

  it("sorts by term by default: the whole label first, then labels starting with it, then other words", async () => {
    expect(await ids({ term: "acme", filter: { type: "domain" } })).toEqual(["acme", "east", "west"]);
    expect(await ids({ term: "acme", filter: { type: "domain" }, sort: { order: "desc" } })).toEqual([
      "west",
      "east",
      "acme",
    ]);
    const { body } = await search({ term: "acme", filter: { type: "domain" } });
    expect(body.hits.hits.map((h: Payload) => h._score)).toEqual([3, 2, 2]);
    expect(body.hits.max_score).toBe(3);
  });

  it("sorts by label and by id", async () => {
    expect(await ids({ term: "", filter: { type: "domain" }, sort: { field: "label" } })).toEqual([
      "acme",
      "east",
      "west",
      "lv",
      "other",
      "root",
    ]);
    expect(await ids({ term: "", filter: { type: "domain" }, sort: { field: "id", order: "desc" } })).toEqual([
      "west",
      "root",
      "other",
      "lv",
      "east",
      "acme",
    ]);
  });

  it("sorts by a named field, asc and desc, with entries lacking it last", async () => {
    const asc = await search({ term: "", filter: { type: "resource" }, sort: { field: "dataType" } });
    expect(asc.body.hits.hits.map((h: Payload) => h._source.metadata.dataType)).toEqual([
      "boolean",
      "geo_point",
      "long",
      "long",
      "long",
      "string",
    ]);
    expect(asc.body.hits.hits[0]._score).toBeNull();
    const desc = await ids({ term: "", sort: { field: "thingType", order: "desc" } });
    expect(desc.slice(0, 6)).toEqual([
      "40/lamp_state",
      "30/battery",
      "30/vegetation",
      "20/power",
      "10/latlng",
      "10/temp",
    ]);
    expect(desc.slice(6).sort()).toEqual([...ALL_DOMAINS].sort());
    expect(await ids({ term: "", filter: { type: "resource" }, sort: { field: "metadata.resourceType" } })).toEqual([
      "40/lamp_state",
      "30/battery",
      // ties on resourceType "thing" go by label
      "10/latlng",
      "20/power",
      "10/temp",
      "30/vegetation",
    ]);
  });
});

describe("privileges limit hits and paths", () => {
  it("domains need Domains.READ, resources need ThingTypes.READ on the thing type's domain", async () => {
    expect((await ids({ term: "" }, "eastie")).sort()).toEqual(["20/power", "east"]);
    expect((await ids({ term: "" }, "typesonly")).sort()).toEqual([
      "10/latlng",
      "10/temp",
      "20/power",
      "30/battery",
      "30/vegetation",
    ]);
    expect((await ids({ term: "" }, "westie")).sort()).toEqual(["lv", "west"]);
    expect((await ids({ term: "" }, "alice")).sort()).toEqual([
      "10/latlng",
      "10/temp",
      "20/power",
      "30/battery",
      "30/vegetation",
      "acme",
      "east",
      "lv",
      "west",
    ]);
  });

  it("metadata.path starts at the highest domain the caller can see", async () => {
    const pathOf = async (user: string, id: string) =>
      (await search({ term: id, filter: { type: "domain" } }, user)).body.hits.hits.find((h: Payload) => h._id === id)
        ?._source.metadata.path;
    expect(await pathOf("admin", "lv")).toBe("root/acme/west/lv");
    expect(await pathOf("alice", "lv")).toBe("acme/west/lv");
    expect(await pathOf("westie", "lv")).toBe("west/lv");
    expect(await pathOf("eastie", "east")).toBe("east");
  });

  it("a caller without either privilege gets no hits, not an error", async () => {
    const { status, body } = await search({ term: "" }, "typesonly");
    expect(status).toBe(200);
    expect(body.hits.hits.every((h: Payload) => h._type === "resource")).toBe(true);
  });
});

describe("bad queries are INVALID_ARGUMENTS on property query", () => {
  const bad: [string, unknown][] = [
    ["no term", {}],
    ["term not a string", { term: 5 }],
    ["negative size", { term: "", size: -1 }],
    ["fractional size", { term: "", size: 1.5 }],
    ["size as text", { term: "", size: "10" }],
    ["size over the window", { term: "", size: 10_001 }],
    ["negative from", { term: "", from: -1 }],
    ["from + size over the window", { term: "", from: 9_950, size: 100 }],
    ["unknown sort field", { term: "", sort: { field: "color" } }],
    ["bad sort order", { term: "", sort: { order: "up" } }],
    ["unknown filter type", { term: "", filter: { type: "thing" } }],
    ["unknown dataType", { term: "", filter: { dataType: "colour" } }],
    ["unknown resourceType", { term: "", filter: { resourceType: "gadget" } }],
    ["unknown filter key", { term: "", filter: { colour: "red" } }],
    ["unknown topDomain", { term: "", filter: { topDomain: "nowhere" } }],
    ["empty thingType", { term: "", filter: { thingType: "" } }],
  ];
  it.each(bad)("%s", async (_name, body) => {
    const res = await search(body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "query" });
  });

  it("a body that is not JSON is INVALID_ARGUMENTS", async () => {
    const res = await t.call("POST", "/search", { user: "admin", body: "{not json" });
    expect(res.status).toBe(400);
    expect((await json(res)).messageKey).toBe("INVALID_ARGUMENTS");
  });
});

describe("the index follows domain and thing-type changes", () => {
  it("a created, relabelled and deleted domain is found, renamed and gone", async () => {
    const created = await t.call("POST", "/admin/domains", {
      user: "admin",
      body: { id: "strip", parent: "lv", label: "Vegas Strip" },
    });
    expect(created.status).toBe(200);
    expect(await ids({ term: "stri" })).toEqual(["strip"]);
    await t.call("PATCH", "/admin/domains/strip", { user: "admin", body: { label: "Fremont Street" } });
    expect(await ids({ term: "stri" })).toEqual(["strip"]); // still by id
    expect(await ids({ term: "fremont" })).toEqual(["strip"]);
    expect(await ids({ term: "vegas strip" })).toEqual([]);
    await t.call("DELETE", "/admin/domains/strip", { user: "admin" });
    expect(await ids({ term: "fremont" })).toEqual([]);
  });

  it("a thing type's resources are indexed, replaced and removed with it", async () => {
    const { registry } = t.dms.services;
    const type = { id: "50", label: "Gauge", domain: "east" };
    await registry.putThingType(
      { ...type, resources: [{ name: "pressure", dataType: "double", resourceType: "thing" }] },
      "create",
    );
    expect(await ids({ term: "press" })).toEqual(["50/pressure"]);
    expect(await ids({ term: "press" }, "eastie")).toEqual(["50/pressure"]);
    await registry.putThingType(
      { ...type, resources: [{ name: "humidity", dataType: "double", resourceType: "thing" }] },
      "update",
    );
    expect(await ids({ term: "press" })).toEqual([]);
    expect(await ids({ term: "humid" })).toEqual(["50/humidity"]);
    await registry.deleteThingType("50");
    expect(await ids({ term: "humid" })).toEqual([]);
  });

  it("is rebuilt from domains and thing types (as at start)", async () => {
    const { search } = t.dms.services;
    search.removeThingType("10");
    search.removeDomain("lv");
    expect((await ids({ term: "" })).length).toBe(9);
    search.rebuild();
    expect((await ids({ term: "" })).length).toBe(12);
  });
});
