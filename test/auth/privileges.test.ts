import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms();
});
afterAll(() => t.close());

const ids = (list: Payload[], key = "id"): string[] => list.map((x) => x[key]).sort();

async function login(userName: string, password: string): Promise<string> {
  const res = await t.call("POST", "/auth/login", { body: { userName, password } });
  expect(res.status).toBe(200);
  return (await json(res)).credentials.token;
}

async function expectRefused(res: Response): Promise<void> {
  expect(res.status).toBe(403);
  expect((await json(res)).messageKey).toBe("NOT_AUTHORIZED");
}

describe("a privilege held on a domain holds on all its sub-domains", () => {
  it("alice (acme) acts on east and west", async () => {
    expect((await t.call("GET", "/admin/domains/east", { user: "alice" })).status).toBe(200);
    expect((await t.call("GET", "/admin/things/e1", { user: "alice" })).status).toBe(200);
    expect((await t.call("GET", "/admin/thing-types/20", { user: "alice" })).status).toBe(200);
    const sub = await t.call("POST", "/admin/domains", { user: "alice", body: { id: "east-1", parent: "east" } });
    expect(sub.status).toBe(200);
    expect((await json(sub)).path).toBe("root/acme/east/east-1");
    const thing = await t.call("POST", "/admin/things", {
      user: "alice",
      body: { thingName: "w-inherit", thingType: "10", domain: "west" },
    });
    expect(thing.status).toBe(200);
    const patched = await t.call("PATCH", "/admin/things/e1", { user: "alice", body: { label: "east meter" } });
    expect(patched.status).toBe(200);
  });

  it("but not up: alice cannot read or change root", async () => {
    await expectRefused(await t.call("GET", "/admin/domains/root", { user: "alice" }));
    await expectRefused(await t.call("PATCH", "/admin/domains/root", { user: "alice", body: { label: "x" } }));
    await expectRefused(await t.call("POST", "/admin/domains", { user: "alice", body: { id: "a2", parent: "root" } }));
    await expectRefused(await t.call("GET", "/admin/users/admin", { user: "alice" }));
  });

  it("nor sideways: alice cannot touch other", async () => {
    await expectRefused(await t.call("GET", "/admin/domains/other", { user: "alice" }));
    await expectRefused(await t.call("DELETE", "/admin/domains/other", { user: "alice" }));
    await expectRefused(
      await t.call("POST", "/admin/things", {
        user: "alice",
        body: { thingName: "o1", thingType: "10", domain: "other" },
      }),
    );
    await expectRefused(
      await t.call("POST", "/admin/thing-types", { user: "alice", body: { id: "o-type", domain: "other" } }),
    );
  });

  it("eastie (east) cannot touch acme or west", async () => {
    await expectRefused(await t.call("GET", "/admin/domains/acme", { user: "eastie" }));
    await expectRefused(await t.call("GET", "/admin/domains/west", { user: "eastie" }));
    await expectRefused(await t.call("GET", "/admin/things/t1", { user: "eastie" }));
    await expectRefused(await t.call("PATCH", "/admin/things/t1", { user: "eastie", body: { label: "mine" } }));
    await expectRefused(await t.call("DELETE", "/admin/thing-groups/g1", { user: "eastie" }));
    await expectRefused(await t.call("GET", "/admin/thing-types/10", { user: "eastie" }));
    await expectRefused(await t.call("POST", "/admin/domains", { user: "eastie", body: { id: "w2", parent: "west" } }));
    await expectRefused(await t.call("GET", "/admin/users/alice", { user: "eastie" }));
    // ...while east itself is its own.
    expect((await t.call("GET", "/admin/things/e1", { user: "eastie" })).status).toBe(200);
  });
});

describe("a Read user may not call ReadWrite operations whatever its privileges", () => {
  it("reader holds *.* on acme and is refused every write", async () => {
    const writes: [string, string, unknown][] = [
      ["POST", "/admin/domains", { id: "r1", parent: "acme" }],
      ["PATCH", "/admin/domains/acme", { label: "x" }],
      ["DELETE", "/admin/domains/west", undefined],
      ["POST", "/admin/users", { userName: "r2", password: "password1", role: "Read", homeDomain: "acme" }],
      ["PATCH", "/admin/users/reader", { role: "ReadWrite" }],
      ["POST", "/admin/thing-types", { id: "r3", domain: "acme" }],
      ["PATCH", "/admin/thing-types/10", { label: "x" }],
      ["POST", "/admin/things", { thingName: "r4", thingType: "10", domain: "acme" }],
      ["DELETE", "/admin/things/t2", undefined],
      ["POST", "/admin/thing-groups", { id: "r5", domain: "acme" }],
      ["POST", "/admin/thing-groups/g1/things", { things: ["t2"] }],
      ["DELETE", "/admin/thing-groups/g1/things/t1", undefined],
    ];
    for (const [method, path, body] of writes) {
      const res = await t.call(method, path, { user: "reader", body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await json(res)).messageKey).toBe("NOT_AUTHORIZED");
    }
    expect((await t.call("GET", "/admin/things/t2", { user: "reader" })).status).toBe(200);
    expect((await t.call("GET", "/admin/thing-groups/g1", { user: "reader" })).status).toBe(200);
  });
});

describe("a user never sees or changes a domain outside its privileges", () => {
  it("lists show only what the caller may read", async () => {
    const list = async (user: string, path: string, key: string, idKey = "id") =>
      ids((await json(await t.call("GET", path, { user })))[key], idKey);

    expect(await list("alice", "/admin/domains", "domains")).toEqual(["acme", "east", "east-1", "west"]);
    expect(await list("eastie", "/admin/domains", "domains")).toEqual(["east", "east-1"]);
    expect(await list("admin", "/admin/domains", "domains")).toEqual([
      "acme",
      "east",
      "east-1",
      "other",
      "root",
      "west",
    ]);
    expect(await list("eastie", "/admin/thing-types", "thingTypes")).toEqual(["20"]);
    expect(await list("eastie", "/admin/things", "things", "thingName")).toEqual(["e1"]);
    expect(await list("eastie", "/admin/thing-groups", "thingGroups")).toEqual([]);
    expect(await list("eastie", "/admin/users", "users", "userName")).toEqual(["eastie"]);
    expect(await list("alice", "/admin/users", "users", "userName")).toEqual(["alice", "eastie", "reader"]);
  });

  it("a group shows only the members the caller may read", async () => {
    await t.call("POST", "/admin/thing-groups", {
      user: "admin",
      body: { id: "mixed", domain: "east", things: ["e1", "t1"] },
    });
    expect((await json(await t.call("GET", "/admin/thing-groups/mixed", { user: "eastie" }))).things).toEqual(["e1"]);
    expect((await json(await t.call("GET", "/admin/thing-groups/mixed", { user: "alice" }))).things).toEqual([
      "e1",
      "t1",
    ]);
    // A member eastie cannot see is, to eastie, not there.
    const res = await t.call("DELETE", "/admin/thing-groups/mixed/things/t1", { user: "eastie" });
    expect(res.status).toBe(404);
    expect((await json(res)).messageKey).toBe("THING_NOT_FOUND");
  });

  it("moving something out of reach is refused; moving needs DELETE on the old and CREATE on the new domain", async () => {
    await expectRefused(await t.call("PATCH", "/admin/things/t2", { user: "alice", body: { domain: "other" } }));
    await expectRefused(await t.call("PATCH", "/admin/thing-types/10", { user: "alice", body: { domain: "other" } }));
    await expectRefused(await t.call("PATCH", "/admin/thing-groups/g1", { user: "alice", body: { domain: "other" } }));
    await expectRefused(await t.call("PATCH", "/admin/things/e1", { user: "eastie", body: { domain: "west" } }));
    const moved = await t.call("PATCH", "/admin/things/t2", { user: "alice", body: { domain: "west" } });
    expect(moved.status).toBe(200);
    expect((await json(moved)).domain).toBe("west");

    // mover: DELETE on east only, CREATE on west only.
    await t.call("POST", "/admin/users", {
      user: "admin",
      body: {
        userName: "mover",
        password: "mover-pw1",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["Things.READ", "ThingTypes.READ"], east: ["Things.DELETE"], west: ["Things.CREATE"] },
      },
    });
    const headers = { authorization: await login("mover", "mover-pw1") };
    await expectRefused(await t.call("PATCH", "/admin/things/e1", { headers, body: { label: "no UPDATE" } }));
    await expectRefused(await t.call("PATCH", "/admin/things/t2", { headers, body: { domain: "east" } }));
    const ok = await t.call("PATCH", "/admin/things/e1", { headers, body: { domain: "west" } });
    expect(ok.status).toBe(200);
  });

  it("users are managed only where Users.* holds on the home domain and on every privilege domain", async () => {
    await expectRefused(
      await t.call("POST", "/admin/users", {
        user: "alice",
        body: { userName: "o-user", password: "password1", role: "Read", homeDomain: "other" },
      }),
    );
    await expectRefused(
      await t.call("POST", "/admin/users", {
        user: "alice",
        body: {
          userName: "o-user",
          password: "password1",
          role: "Read",
          homeDomain: "acme",
          privileges: { other: ["Things.READ"] },
        },
      }),
    );
    await expectRefused(await t.call("PATCH", "/admin/users/admin", { user: "alice", body: { email: "a@b.co" } }));
    await expectRefused(await t.call("DELETE", "/admin/users/admin", { user: "alice" }));
    await expectRefused(await t.call("PATCH", "/admin/users/eastie", { user: "alice", body: { homeDomain: "other" } }));
  });
});

describe("no escalation: a caller grants only privileges it holds on that domain", () => {
  const newUser = (userName: string, privileges: Record<string, string[]>) => ({
    userName,
    password: "password1",
    role: "ReadWrite",
    homeDomain: "east",
    privileges,
  });

  it("alice may grant what she holds, in full or in part, on acme and below", async () => {
    const res = await t.call("POST", "/admin/users", {
      user: "alice",
      body: newUser("granted", { east: ["Rules.*", "Things.READ"], acme: ["ThingJobs.CREATE"] }),
    });
    expect(res.status).toBe(200);
  });

  it("alice may not grant what she lacks: ApiKeys, *.*, a READ on every resource", async () => {
    for (const grant of ["ApiKeys.READ", "*.*", "*.READ", "Observations.*"]) {
      const res = await t.call("POST", "/admin/users", {
        user: "alice",
        body: newUser(`esc-${grant.length}`, { east: [grant] }),
      });
      expect(res.status, grant).toBe(403);
      expect((await json(res)).messageKey).toBe("NOT_AUTHORIZED");
    }
    await expectRefused(
      await t.call("PATCH", "/admin/users/granted", { user: "alice", body: { privileges: { east: ["*.*"] } } }),
    );
    // Nor to herself.
    await expectRefused(
      await t.call("PATCH", "/admin/users/alice", { user: "alice", body: { privileges: { acme: ["*.*"] } } }),
    );
  });

  it("eastie holds *.* on east but grants nothing on acme", async () => {
    await expectRefused(
      await t.call("POST", "/admin/users", {
        user: "eastie",
        body: { ...newUser("e-esc", { acme: ["Rules.READ"] }) },
      }),
    );
    const ok = await t.call("POST", "/admin/users", {
      user: "eastie",
      body: newUser("e-ok", { east: ["*.*"] }),
    });
    expect(ok.status).toBe(200);
  });

  it("raising a Read user to ReadWrite counts every grant it holds as granted anew", async () => {
    // reader holds *.* on acme; alice holds much but not all of it.
    await expectRefused(await t.call("PATCH", "/admin/users/reader", { user: "alice", body: { role: "ReadWrite" } }));
    const ok = await t.call("PATCH", "/admin/users/reader", { user: "admin", body: { email: "reader@example.com" } });
    expect(ok.status).toBe(200);
  });

  it("keeping a grant the user already has is not granting it", async () => {
    await t.call("POST", "/admin/users", {
      user: "admin",
      body: newUser("keeper", { east: ["ApiKeys.READ"] }),
    });
    const res = await t.call("PATCH", "/admin/users/keeper", {
      user: "alice",
      body: { privileges: { east: ["ApiKeys.READ", "Rules.READ"] }, email: "keeper@example.com" },
    });
    expect(res.status).toBe(200);
    expect((await json(res)).privileges).toEqual({ east: ["ApiKeys.READ", "Rules.READ"] });
  });
});
