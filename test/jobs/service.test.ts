import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../src/auth/index.js";
import { createJobs, type Jobs } from "../../src/jobs/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";

/** The thing-job access rules, checked on the jobs capability made from its parts (no service, no HTTP). */

let parts: Parts;
let jobs: Jobs;

beforeAll(async () => {
  parts = await openParts({
    users: [
      // Jobs of acme, but none of its things or groups.
      {
        userName: "operator",
        password: "operator-pw",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["ThingJobs.*"] },
      },
    ],
  });
  jobs = createJobs({ ...parts, store: parts.stores.jobs });
});
afterAll(async () => {
  jobs.jobs.close();
  await parts.close();
});

async function documentOf(p: Principal, domain: string): Promise<string> {
  const ticket = await jobs.service.uploadTicket(p, "firmware", domain);
  const body = new TextEncoder().encode('{"op":"update"}');
  await jobs.service.upload({
    documentId: ticket.documentId,
    request: new Request(ticket.signedUrl, { method: "PUT" }),
    contentType: "application/json",
    contentLength: String(body.length),
    body: async () => body.buffer,
  });
  return ticket.documentId;
}

describe("thing jobs: access checks in the service", () => {
  let acmeJob: string;
  let eastJob: string;

  beforeAll(async () => {
    const alice = parts.as("alice");
    const base = { description: "update", targetSelection: "SNAPSHOT" as const };
    acmeJob = (
      await jobs.service.create(alice, {
        ...base,
        domain: "acme",
        jobDocumentId: await documentOf(alice, "acme"),
        targets: { things: ["t1"] },
      })
    ).jobId;
    const eastie = parts.as("eastie");
    eastJob = (
      await jobs.service.create(eastie, {
        ...base,
        domain: "east",
        jobDocumentId: await documentOf(eastie, "east"),
        targets: { things: ["e1"] },
      })
    ).jobId;
  });

  it("a job is read with ThingJobs.READ on its domain or above, and changed only by a ReadWrite user", async () => {
    expect((await jobs.service.describe(parts.as("alice"), acmeJob)).domain).toBe("acme");
    expect((await jobs.service.describe(parts.as("alice"), eastJob)).domain).toBe("east");
    expect(await refusal(() => jobs.service.describe(parts.as("eastie"), acmeJob))).toBe("NOT_AUTHORIZED");
    expect((await jobs.service.describe(parts.as("reader"), acmeJob)).jobId).toBe(acmeJob);
    expect(await refusal(() => jobs.service.cancel(parts.as("reader"), acmeJob, "no"))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => jobs.service.delete(parts.as("eastie"), acmeJob, true))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => jobs.service.document(parts.as("eastie"), acmeJob))).toBe("NOT_AUTHORIZED");
    expect(await jobs.service.document(parts.as("alice"), acmeJob)).toEqual({ op: "update" });
  });

  it("LIST holds the jobs of the caller's readable domains only; a group filter needs ThingGroups.READ on it", async () => {
    const ids = async (p: Principal) => (await jobs.service.list(p, {})).map((j) => j.jobId);
    expect((await ids(parts.as("alice"))).sort()).toEqual([acmeJob, eastJob].sort());
    expect(await ids(parts.as("eastie"))).toEqual([eastJob]);
    expect(await refusal(() => jobs.service.list(parts.as("eastie"), { group: "g1" }))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => jobs.service.list(parts.as("alice"), { group: "nope" }))).toBe("THING_GROUP_NOT_FOUND");
  });

  it("CREATE needs read access to every target: another domain's thing or group is, to the caller, not there", async () => {
    const eastie = parts.as("eastie");
    const doc = await documentOf(eastie, "east");
    const job = { description: "x", targetSelection: "SNAPSHOT" as const, domain: "east", jobDocumentId: doc };
    expect(await refusal(() => jobs.service.create(eastie, { ...job, targets: { things: ["t1"] } }))).toBe(
      "THING_NOT_FOUND",
    );
    expect(await refusal(() => jobs.service.create(eastie, { ...job, targets: { groups: ["g1"] } }))).toBe(
      "THING_GROUP_NOT_FOUND",
    );
    // ThingJobs.* on acme without Things.READ there: naming a thing at all is refused.
    const operator = parts.as("operator");
    const acmeDoc = await documentOf(operator, "acme");
    expect(
      await refusal(() =>
        jobs.service.create(operator, { ...job, domain: "acme", jobDocumentId: acmeDoc, targets: { things: ["t1"] } }),
      ),
    ).toBe("NOT_AUTHORIZED");
  });

  it("an upload URL needs ThingJobs.CREATE on an existing domain and a ReadWrite user", async () => {
    expect(await refusal(() => jobs.service.uploadTicket(parts.as("alice"), "doc", "nowhere"))).toBe(
      "NOT_AUTHORIZED_DOMAIN",
    );
    expect(await refusal(() => jobs.service.uploadTicket(parts.as("eastie"), "doc", "acme"))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => jobs.service.uploadTicket(parts.as("reader"), "doc", "acme"))).toBe("NOT_AUTHORIZED");
  });
});
