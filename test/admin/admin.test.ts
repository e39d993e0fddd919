import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BusEvents } from "../../src/bus/index.js";
import { API_KEY, startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms();
});
afterAll(() => t.close());

const admin = (method: string, path: string, body?: unknown) => t.call(method, path, { user: "admin", body });

async function expectError(res: Response, status: number, messageKey: string, property?: string): Promise<void> {
  const body = await json(res);
  expect({ status: res.status, messageKey: body.messageKey, property: body.property }).toEqual({
    status,
    messageKey,
    property,
  });
}

describe("every admin route validates its input", () => {
  const cases: [string, string, unknown, string, string][] = [
    // [method, path, body, key, property]
    ["POST", "/admin/domains", { parent: "acme" }, "PROPERTY_REQUIRED", "id"],
    ["POST", "/admin/domains", { id: "x", parent: 5 }, "INVALID_ARGUMENTS", "parent"],
    ["PATCH", "/admin/domains/acme", {}, "PROPERTY_REQUIRED", "label"],
    ["PATCH", "/admin/domains/acme", { label: "" }, "INVALID_ARGUMENTS", "label"],
    ["POST", "/admin/users", { userName: "v1", role: "Read", homeDomain: "acme" }, "PROPERTY_REQUIRED", "password"],
    [
      "POST",
      "/admin/users",
      { userName: "v1", password: "password1", role: "Admin", homeDomain: "acme" },
      "INVALID_ARGUMENTS",
      "role",
    ],
    [
      "POST",
      "/admin/users",
      { userName: "bad name", password: "password1", role: "Read", homeDomain: "acme" },
      "INVALID_ARGUMENTS",
      "userName",
    ],
    [
      "POST",
      "/admin/users",
      { userName: "v1", password: "short", role: "Read", homeDomain: "acme" },
      "INVALID_ARGUMENTS",
      "password",
    ],
    [
      "POST",
      "/admin/users",
      { userName: "v1", password: "password1", role: "Read", homeDomain: "acme", privileges: { acme: ["Rules.FLY"] } },
      "INVALID_ARGUMENTS",
      "privileges.acme.0",
    ],
    ["PATCH", "/admin/users/alice", { email: "not-an-address" }, "INVALID_ARGUMENTS", "email"],
    ["PATCH", "/admin/users/alice", { role: 1 }, "INVALID_ARGUMENTS", "role"],
    ["POST", "/admin/api-keys", { label: 123 }, "INVALID_ARGUMENTS", "label"],
    ["POST", "/admin/thing-types", { id: "v1" }, "PROPERTY_REQUIRED", "domain"],
    ["POST", "/admin/thing-types", { id: "v 1", domain: "acme" }, "INVALID_ARGUMENTS", "id"],
    [
      "POST",
      "/admin/thing-types",
      { id: "v1", domain: "acme", resources: [{ dataType: "long" }] },
      "PROPERTY_REQUIRED",
      "resources.0.name",
    ],
    [
      "POST",
      "/admin/thing-types",
      { id: "v1", domain: "acme", resources: [{ name: "temp", dataType: "float" }] },
      "INVALID_ARGUMENTS",
      "resources.0.dataType",
    ],
    [
      "POST",
      "/admin/thing-types",
      { id: "v1", domain: "acme", resources: [{ name: "temp", dataType: "long", resourceType: "gadget" }] },
      "INVALID_ARGUMENTS",
      "resources.0.resourceType",
    ],
    [
      "POST",
      "/admin/thing-types",
      {
        id: "v1",
        domain: "acme",
        resources: [
          { name: "temp", dataType: "long" },
          { name: "temp", dataType: "double" },
        ],
      },
      "INVALID_ARGUMENTS",
      "resources",
    ],
    ["PATCH", "/admin/thing-types/10", { resources: "temp" }, "INVALID_ARGUMENTS", "resources"],
    ["POST", "/admin/things", { thingName: "v1", domain: "acme" }, "PROPERTY_REQUIRED", "thingType"],
    ["POST", "/admin/things", { thingType: "10", domain: "acme" }, "PROPERTY_REQUIRED", "thingName"],
    [
      "POST",
      "/admin/things",
      { thingName: "v1", thingType: "10", domain: "acme", serial: 5 },
      "INVALID_ARGUMENTS",
      "serial",
    ],
    ["PATCH", "/admin/things/t1", { secret: "" }, "INVALID_ARGUMENTS", "secret"],
    ["GET", "/admin/things?thingType=", undefined, "INVALID_ARGUMENTS", "thingType"],
    ["POST", "/admin/thing-groups", { domain: "acme" }, "PROPERTY_REQUIRED", "id"],
    ["POST", "/admin/thing-groups", { id: "v1", domain: "acme", things: "t1" }, "INVALID_ARGUMENTS", "things"],
    ["PATCH", "/admin/thing-groups/g1", { name: "has space" }, "INVALID_ARGUMENTS", "name"],
    ["POST", "/admin/thing-groups/g1/things", {}, "PROPERTY_REQUIRED", "things"],
    ["POST", "/admin/thing-groups/g1/things", { things: [] }, "INVALID_ARGUMENTS", "things"],
    ["POST", "/admin/thing-groups/g1/things", { things: [1] }, "INVALID_ARGUMENTS", "things.0"],
  ];

  it.each(cases)("%s %s %j answers %s naming %s", async (method, path, body, key, property) => {
    await expectError(await admin(method, path, body), 400, key, property);
  });

  it("a body that is not JSON is INVALID_ARGUMENTS, never a 500", async () => {
    for (const path of ["/admin/users", "/admin/things", "/admin/thing-types", "/admin/thing-groups"]) {
      const res = await admin("POST", path, "{nope");
      expect(res.status, path).toBe(400);
      expect((await json(res)).messageKey).toBe("INVALID_ARGUMENTS");
    }
  });

  it("unknown domains answer DOMAIN_NOT_FOUND naming the property", async () => {
    await expectError(
      await admin("POST", "/admin/users", { userName: "v2", password: "password1", role: "Read", homeDomain: "nope" }),
      404,
      "DOMAIN_NOT_FOUND",
      "homeDomain",
    );
    await expectError(
      await admin("POST", "/admin/users", {
        userName: "v2",
        password: "password1",
        role: "Read",
        homeDomain: "acme",
        privileges: { nope: ["Rules.READ"] },
      }),
      404,
      "DOMAIN_NOT_FOUND",
      "privileges",
    );
    await expectError(
      await admin("POST", "/admin/thing-types", { id: "v3", domain: "nope" }),
      404,
      "DOMAIN_NOT_FOUND",
      "domain",
    );
    await expectError(
      await admin("POST", "/admin/things", { thingName: "v3", thingType: "10", domain: "nope" }),
      404,
      "DOMAIN_NOT_FOUND",
      "domain",
    );
    await expectError(
      await admin("POST", "/admin/thing-groups", { id: "v3", domain: "nope" }),
      404,
      "DOMAIN_NOT_FOUND",
      "domain",
    );
    await expectError(await admin("PATCH", "/admin/things/t1", { domain: "nope" }), 404, "DOMAIN_NOT_FOUND", "domain");
  });

  it("unknown objects answer their *_NOT_FOUND key", async () => {
    const cases: [string, string, unknown, string, string][] = [
      ["GET", "/admin/domains/nope", undefined, "DOMAIN_NOT_FOUND", "id"],
      ["GET", "/admin/users/nope", undefined, "USER_NOT_FOUND", "userName"],
      ["PATCH", "/admin/users/nope", { role: "Read" }, "USER_NOT_FOUND", "userName"],
      ["DELETE", "/admin/users/nope", undefined, "USER_NOT_FOUND", "userName"],
      ["DELETE", "/admin/api-keys/nope", undefined, "API_KEY_NOT_FOUND", "id"],
      ["GET", "/admin/thing-types/nope", undefined, "THING_TYPE_NOT_FOUND", "id"],
      ["PATCH", "/admin/thing-types/nope", { label: "x" }, "THING_TYPE_NOT_FOUND", "id"],
      ["DELETE", "/admin/thing-types/nope", undefined, "THING_TYPE_NOT_FOUND", "id"],
      ["GET", "/admin/things/nope", undefined, "THING_NOT_FOUND", "thingName"],
      ["PATCH", "/admin/things/nope", { label: "x" }, "THING_NOT_FOUND", "thingName"],
      ["DELETE", "/admin/things/nope", undefined, "THING_NOT_FOUND", "thingName"],
      [
        "POST",
        "/admin/things",
        { thingName: "v4", thingType: "nope", domain: "acme" },
        "THING_TYPE_NOT_FOUND",
        "thingType",
      ],
      ["PATCH", "/admin/things/t1", { thingType: "nope" }, "THING_TYPE_NOT_FOUND", "thingType"],
      ["GET", "/admin/thing-groups/nope", undefined, "THING_GROUP_NOT_FOUND", "id"],
      ["PATCH", "/admin/thing-groups/nope", { name: "x" }, "THING_GROUP_NOT_FOUND", "id"],
      ["DELETE", "/admin/thing-groups/nope", undefined, "THING_GROUP_NOT_FOUND", "id"],
      ["POST", "/admin/thing-groups/nope/things", { things: ["t1"] }, "THING_GROUP_NOT_FOUND", "id"],
      ["DELETE", "/admin/thing-groups/nope/things/t1", undefined, "THING_GROUP_NOT_FOUND", "id"],
      ["POST", "/admin/thing-groups/g1/things", { things: ["nope"] }, "THING_NOT_FOUND", "things"],
      ["POST", "/admin/thing-groups", { id: "v5", domain: "acme", things: ["nope"] }, "THING_NOT_FOUND", "things"],
      ["DELETE", "/admin/thing-groups/g1/things/t2", undefined, "THING_NOT_FOUND", "thingName"],
    ];
    for (const [method, path, body, key, property] of cases) {
      const res = await admin(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await json(res), `${method} ${path}`).toMatchObject({ messageKey: key, property });
    }
    // A failed create leaves nothing behind.
    expect((await admin("GET", "/admin/thing-groups/v5")).status).toBe(404);
  });
});

describe("the API description", () => {
  it("declares every admin route in /openapi.json", async () => {
    const doc = await json(await fetch(`${t.url}/openapi.json`));
    expect(
      Object.keys(doc.paths)
        .filter((p) => p.startsWith("/admin/"))
        .sort(),
    ).toEqual([
      "/admin/api-keys",
      "/admin/api-keys/{id}",
      "/admin/domains",
      "/admin/domains/{id}",
      "/admin/thing-groups",
      "/admin/thing-groups/{id}",
      "/admin/thing-groups/{id}/things",
      "/admin/thing-groups/{id}/things/{thingName}",
      "/admin/thing-types",
      "/admin/thing-types/{id}",
      "/admin/things",
      "/admin/things/bulk",
      "/admin/things/{thingName}",
      "/admin/users",
      "/admin/users/{userName}",
    ]);
    expect(Object.keys(doc.paths["/admin/users"])).toEqual(["get", "post"]);
    expect(doc.paths["/admin/users"].post.responses).toHaveProperty("200");
  });
});

describe("/admin/users", () => {
  it("creates (200), reads, lists, updates and deletes a user; never returns a password", async () => {
    const created = await admin("POST", "/admin/users", {
      userName: "carol",
      password: "carol-pw-1",
      role: "Read",
      homeDomain: "west",
      email: "carol@example.com",
      privileges: { west: ["Rules.READ", "Things.READ"] },
    });
    expect(created.status).toBe(200);
    const body = await json(created);
    expect(body).toEqual({
      userName: "carol",
      role: "Read",
      homeDomain: "west",
      email: "carol@example.com",
      privileges: { west: ["Rules.READ", "Things.READ"] },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(await json(await admin("GET", "/admin/users/carol"))).toEqual(body);
    const listed = (await json(await admin("GET", "/admin/users"))).users;
    expect(listed.map((u: { userName: string }) => u.userName)).toContain("carol");
    expect(JSON.stringify(listed)).not.toMatch(/password|scrypt/i);

    const patched = await admin("PATCH", "/admin/users/carol", {
      role: "ReadWrite",
      email: null,
      password: "carol-pw-2",
    });
    expect(patched.status).toBe(200);
    expect(await json(patched)).toMatchObject({ role: "ReadWrite", email: null });
    const login = await t.call("POST", "/auth/login", { body: { userName: "carol", password: "carol-pw-2" } });
    expect(login.status).toBe(200);

    expect((await admin("DELETE", "/admin/users/carol")).status).toBe(200);
    await expectError(await admin("GET", "/admin/users/carol"), 404, "USER_NOT_FOUND", "userName");
  });

  it("two concurrent creates of one name answer 200 and 409, never 500", async () => {
    const body = { userName: "twin", password: "password1", role: "Read", homeDomain: "acme" };
    const statuses = await Promise.all([admin("POST", "/admin/users", body), admin("POST", "/admin/users", body)]);
    expect(statuses.map((r) => r.status).sort()).toEqual([200, 409]);
    const thing = {
      thingName: "twin",
      thingType: "10",
      domain: "acme",
      serial: "SN-TWIN",
      secret: "twin-pw-0123456789abcdef",
    };
    const things = await Promise.all([admin("POST", "/admin/things", thing), admin("POST", "/admin/things", thing)]);
    expect(things.map((r) => r.status).sort()).toEqual([200, 409]);
  });

  it("a login cannot tell an unknown user from a wrong password", async () => {
    const unknown = await t.call("POST", "/auth/login", { body: { userName: "nobody", password: "password1" } });
    const wrong = await t.call("POST", "/auth/login", { body: { userName: "alice", password: "password1" } });
    expect([unknown.status, wrong.status]).toEqual([401, 401]);
    expect(await json(unknown)).toEqual(await json(wrong));
  });

  it("a duplicate answers 409 ALREADY_EXISTS", async () => {
    const res = await admin("POST", "/admin/users", {
      userName: "alice",
      password: "password1",
      role: "Read",
      homeDomain: "acme",
    });
    await expectError(res, 409, "ALREADY_EXISTS", "userName");
  });
});

describe("/admin/api-keys", () => {
  it("create returns the key once; list shows no keys; delete revokes it", async () => {
    const res = await admin("POST", "/admin/api-keys", { label: "ci" });
    expect(res.status).toBe(200);
    const created = await json(res);
    expect(created).toEqual({
      id: expect.any(String),
      label: "ci",
      createdAt: expect.any(String),
      key: expect.any(String),
    });
    expect(created.key.length).toBeGreaterThanOrEqual(32);

    const withNewKey = await t.call("GET", "/admin/domains", { user: "admin", headers: { "x-api-key": created.key } });
    expect(withNewKey.status).toBe(200);

    const list = (await json(await admin("GET", "/admin/api-keys"))).apiKeys;
    expect(list).toContainEqual({ id: created.id, label: "ci", createdAt: created.createdAt });
    expect(JSON.stringify(list)).not.toContain(created.key);
    expect(JSON.stringify(list)).not.toContain(API_KEY);

    expect((await admin("DELETE", `/admin/api-keys/${created.id}`)).status).toBe(200);
    const revoked = await t.call("GET", "/admin/domains", { user: "admin", headers: { "x-api-key": created.key } });
    expect(revoked.status).toBe(403);
    expect(await json(revoked)).toEqual({ message: "Forbidden" });
    await expectError(await admin("DELETE", `/admin/api-keys/${created.id}`), 404, "API_KEY_NOT_FOUND", "id");
  });

  it("a POST without a body makes a key with an empty label", async () => {
    const res = await t.call("POST", "/admin/api-keys", { user: "admin" });
    expect(res.status).toBe(200);
    expect((await json(res)).label).toBe("");
  });

  it("needs ApiKeys.* on root: alice and eastie are refused", async () => {
    for (const user of ["alice", "eastie"]) {
      expect((await t.call("GET", "/admin/api-keys", { user })).status).toBe(403);
      expect((await t.call("POST", "/admin/api-keys", { user, body: {} })).status).toBe(403);
    }
  });
});

describe("/admin/thing-types", () => {
  it("creates with resources (200), reads, updates, moves and deletes", async () => {
    const res = await t.call("POST", "/admin/thing-types", {
      user: "alice",
      body: {
        id: "30",
        label: "Door",
        domain: "west",
        resources: [
          { name: "open", dataType: "boolean" },
          { name: "door.state", dataType: "string", resourceType: "sub-thing" },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      id: "30",
      label: "Door",
      domain: "west",
      resources: [
        { name: "door.state", dataType: "string", resourceType: "sub-thing" },
        { name: "open", dataType: "boolean", resourceType: "thing" },
      ],
    });
    await expectError(
      await t.call("POST", "/admin/thing-types", { user: "alice", body: { id: "30", domain: "west" } }),
      409,
      "ALREADY_EXISTS",
      "id",
    );
    const patched = await t.call("PATCH", "/admin/thing-types/30", {
      user: "alice",
      body: { resources: [{ name: "open", dataType: "long" }] },
    });
    expect((await json(patched)).resources).toEqual([{ name: "open", dataType: "long", resourceType: "thing" }]);
    const moved = await t.call("PATCH", "/admin/thing-types/30", { user: "alice", body: { domain: "east" } });
    expect((await json(moved)).domain).toBe("east");
    expect((await t.call("GET", "/admin/thing-types/30", { user: "eastie" })).status).toBe(200);
    expect((await t.call("DELETE", "/admin/thing-types/30", { user: "eastie" })).status).toBe(200);
    await expectError(await admin("GET", "/admin/thing-types/30"), 404, "THING_TYPE_NOT_FOUND", "id");
  });

  it("a type that things still use is not deleted", async () => {
    await expectError(await admin("DELETE", "/admin/thing-types/10"), 400, "INVALID_ARGUMENTS", "id");
  });

  it("lists filter by domain", async () => {
    const list = (await json(await admin("GET", "/admin/thing-types?domain=east"))).thingTypes;
    expect(list.map((x: { id: string }) => x.id)).toEqual(["20"]);
  });
});

describe("/admin/things", () => {
  it("creates (200) with serial and a write-only secret, reads, updates and deletes", async () => {
    const res = await t.call("POST", "/admin/things", {
      user: "alice",
      body: {
        thingName: "w1",
        thingType: "10",
        domain: "west",
        serial: "SN-W1",
        secret: "w1-secret-0123456789abcdef",
        label: "W1",
      },
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toEqual({
      thingName: "w1",
      thingType: "10",
      domain: "west",
      serial: "SN-W1",
      label: "W1",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const registry = t.dms.services.registry;
    expect(await registry.verifyThingSecret("w1", "w1-secret-0123456789abcdef")).toBe(true);

    const got = await t.call("GET", "/admin/things/w1", { user: "alice" });
    expect(await json(got)).toEqual(body);
    const patched = await t.call("PATCH", "/admin/things/w1", {
      user: "alice",
      body: { secret: "w1-new-0123456789abcdef", label: "W one" },
    });
    expect(await json(patched)).toMatchObject({ label: "W one", serial: "SN-W1" });
    expect(JSON.stringify(await json(await admin("GET", "/admin/things")))).not.toMatch(/secret|scrypt/);
    expect(await registry.verifyThingSecret("w1", "w1-new-0123456789abcdef")).toBe(true);
    expect(await registry.verifyThingSecret("w1", "w1-secret-0123456789abcdef")).toBe(false);

    const byType = (await json(await admin("GET", "/admin/things?thingType=20"))).things;
    expect(byType.map((x: { thingName: string }) => x.thingName)).toEqual(["e1"]);

    expect((await t.call("DELETE", "/admin/things/w1", { user: "alice" })).status).toBe(200);
    await expectError(await admin("GET", "/admin/things/w1"), 404, "THING_NOT_FOUND", "thingName");
  });

  it("duplicates answer 409: the name, and a serial another thing holds", async () => {
    await expectError(
      await admin("POST", "/admin/things", { thingName: "t1", thingType: "10", domain: "acme" }),
      409,
      "ALREADY_EXISTS",
      "thingName",
    );
    await expectError(
      await admin("POST", "/admin/things", { thingName: "t9", thingType: "10", domain: "acme", serial: "SN1" }),
      409,
      "ALREADY_EXISTS",
      "serial",
    );
  });

  it("a thing type the caller cannot read is THING_TYPE_NOT_FOUND", async () => {
    await expectError(
      await t.call("POST", "/admin/things", {
        user: "eastie",
        body: { thingName: "e9", thingType: "10", domain: "east" },
      }),
      404,
      "THING_TYPE_NOT_FOUND",
      "thingType",
    );
  });
});

describe("/admin/thing-groups", () => {
  it("creates (200), reads by id or name, renames, moves and deletes", async () => {
    const res = await t.call("POST", "/admin/thing-groups", {
      user: "alice",
      body: { id: "g2", name: "trucks", domain: "acme", things: ["t2"] },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ id: "g2", name: "trucks", domain: "acme", things: ["t2"] });
    expect((await json(await admin("GET", "/admin/thing-groups/trucks"))).id).toBe("g2");
    await expectError(
      await admin("POST", "/admin/thing-groups", { id: "g2", domain: "acme" }),
      409,
      "ALREADY_EXISTS",
      "id",
    );
    await expectError(
      await admin("POST", "/admin/thing-groups", { id: "g3", name: "trucks", domain: "acme" }),
      409,
      "ALREADY_EXISTS",
      "name",
    );
    // Ids and names share one namespace: the interface names a group by either.
    await expectError(
      await admin("POST", "/admin/thing-groups", { id: "fleet", domain: "acme" }),
      409,
      "ALREADY_EXISTS",
      "id",
    );
    const renamed = await t.call("PATCH", "/admin/thing-groups/g2", {
      user: "alice",
      body: { name: "lorries", domain: "west" },
    });
    expect(await json(renamed)).toMatchObject({ id: "g2", name: "lorries", domain: "west" });
    expect((await t.call("DELETE", "/admin/thing-groups/lorries", { user: "alice" })).status).toBe(200);
    await expectError(await admin("GET", "/admin/thing-groups/g2"), 404, "THING_GROUP_NOT_FOUND", "id");
  });

  it("membership changes publish thingGroup.membership events on the bus", async () => {
    const events: BusEvents["thingGroup.membership"][] = [];
    const off = t.dms.services.bus.on("thingGroup.membership", (e) => events.push(e));
    try {
      const added = await t.call("POST", "/admin/thing-groups/g1/things", {
        user: "alice",
        body: { things: ["t2", "t1"] },
      });
      expect(added.status).toBe(200);
      expect((await json(added)).things).toEqual(["t1", "t2"]);
      // t1 was a member already: only t2 is an event.
      expect(events).toEqual([{ groupId: "g1", thingName: "t2", change: "added" }]);

      const removed = await t.call("DELETE", "/admin/thing-groups/fleet/things/t2", { user: "alice" });
      expect(removed.status).toBe(200);
      expect((await json(removed)).things).toEqual(["t1"]);
      expect(events.at(-1)).toEqual({ groupId: "g1", thingName: "t2", change: "removed" });

      await admin("POST", "/admin/thing-groups", { id: "g4", domain: "acme", things: ["t1", "t2"] });
      expect(events.slice(-2)).toEqual([
        { groupId: "g4", thingName: "t1", change: "added" },
        { groupId: "g4", thingName: "t2", change: "added" },
      ]);
      await admin("DELETE", "/admin/thing-groups/g4");
      expect(events.slice(-2).map((e) => [e.groupId, e.change])).toEqual([
        ["g4", "removed"],
        ["g4", "removed"],
      ]);
      expect(events).toHaveLength(6);
    } finally {
      off();
    }
  });

  it("the things added must be readable (Things.READ)", async () => {
    await admin("POST", "/admin/thing-groups", { id: "east-group", domain: "east" });
    await expectError(
      await t.call("POST", "/admin/thing-groups/east-group/things", { user: "eastie", body: { things: ["t1"] } }),
      404,
      "THING_NOT_FOUND",
      "things",
    );
    await expectError(
      await t.call("POST", "/admin/thing-groups", {
        user: "eastie",
        body: { id: "eg2", domain: "east", things: ["t1"] },
      }),
      404,
      "THING_NOT_FOUND",
      "things",
    );
    const ok = await t.call("POST", "/admin/thing-groups/east-group/things", {
      user: "eastie",
      body: { things: ["e1"] },
    });
    expect((await json(ok)).things).toEqual(["e1"]);
  });
});
