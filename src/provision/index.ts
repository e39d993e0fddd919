import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ROLES, type Identity } from "../auth/index.js";
import { DATA_TYPES, RESOURCE_TYPES, type ThingRegistry } from "../things/index.js";

const ProvisionSchema = z.object({
  // A key is a string, or {key, public: true} for the public client key that GET /metadata/manifest serves.
  apiKeys: z
    .array(z.union([z.string().min(1), z.object({ key: z.string().min(1), public: z.boolean().default(false) })]))
    .default([])
    .refine((keys) => keys.filter((k) => typeof k !== "string" && k.public).length <= 1, "at most one public key"),
  domains: z
    .array(z.object({ id: z.string().min(1), parent: z.string().min(1).optional(), label: z.string().optional() }))
    .default([]),
  users: z
    .array(
      z.object({
        userName: z.string().min(1),
        password: z.string().min(1),
        role: z.enum(ROLES),
        homeDomain: z.string().min(1),
        email: z.string().optional(),
        privileges: z.record(z.string(), z.array(z.string())).default({}),
      }),
    )
    .default([]),
  thingTypes: z
    .array(
      z.object({
        id: z.string().min(1),
        label: z.string().optional(),
        domain: z.string().min(1),
        resources: z
          .array(
            z.object({
              name: z.string().min(1),
              dataType: z.enum(DATA_TYPES).default("unknown"),
              resourceType: z.enum(RESOURCE_TYPES).default("thing"),
            }),
          )
          .default([]),
      }),
    )
    .default([]),
  // Entries are checked in slices as they are applied (`ThingEntrySchema`): 100,000 at once would hold the loop.
  things: z.array(z.unknown()).default([]),
  thingGroups: z
    .array(
      z.object({
        id: z.string().min(1),
        name: z.string().optional(),
        domain: z.string().min(1),
        things: z.array(z.string()).default([]),
      }),
    )
    .default([]),
});

const ThingEntrySchema = z.object({
  thingName: z.string().min(1),
  thingType: z.string().min(1),
  domain: z.string().min(1),
  serial: z.string().optional(),
  secret: z.string().optional(),
  // A chosen secret hashed beforehand (`npm run provision:hash`), so that the file holds no secret in clear.
  secretHash: z.string().optional(),
  label: z.string().optional(),
});

export type Provision = Omit<z.input<typeof ProvisionSchema>, "things"> & {
  things?: z.input<typeof ThingEntrySchema>[];
};

/** How far provisioning got: readiness and logs report it. */
export interface ProvisionProgress {
  thingsDone: number;
  thingsTotal: number;
}

/** What applying the things changed. */
export interface ProvisionSummary {
  things: { created: number; updated: number; unchanged: number };
}

/** Entries validated per turn of the event loop. */
const VALIDATE_SLICE = 5000;

export interface ProvisionTarget {
  identity: Identity;
  registry: ThingRegistry;
}

export async function provisionFromFile(
  file: string,
  target: ProvisionTarget,
  onProgress?: (progress: ProvisionProgress) => void,
): Promise<ProvisionSummary> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, "utf8"));
  } catch (e) {
    throw new Error(`DMS_PROVISION: cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  return provision(json, target, onProgress);
}

/**
 * Applies a provisioning document: creates what is missing and brings what
 * exists to the document's values. Applying it twice changes nothing.
 */
export async function provision(
  document: unknown,
  { identity, registry }: ProvisionTarget,
  onProgress?: (progress: ProvisionProgress) => void,
): Promise<ProvisionSummary> {
  const parsed = ProvisionSchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`DMS_PROVISION: ${issue.path.join(".")}: ${issue.message}`);
  }
  const doc = parsed.data;
  for (const entry of doc.apiKeys) {
    if (typeof entry === "string") await identity.addApiKey(entry, "provisioned");
    else await identity.addApiKey(entry.key, entry.public ? "public client key" : "provisioned", entry.public);
  }
  for (const d of doc.domains) {
    const existing = identity.domain(d.id);
    if (!existing) {
      if (!d.parent) throw new Error(`DMS_PROVISION: domain ${d.id} needs a parent (only root has none)`);
      await identity.createDomain(d.id, d.parent, d.label);
    } else if (d.label !== undefined && d.label !== existing.label) {
      await identity.updateDomain(d.id, d.label);
    }
  }
  for (const u of doc.users) {
    const existing = identity.user(u.userName);
    if (!existing) {
      await identity.createUser(u);
      continue;
    }
    const auth = await identity.authenticate(u.userName, u.password);
    await identity.updateUser(u.userName, {
      role: u.role,
      homeDomain: u.homeDomain,
      email: u.email,
      privileges: u.privileges,
      ...(auth ? {} : { password: u.password }),
    });
  }
  for (const t of doc.thingTypes) await registry.putThingType({ ...t, label: t.label ?? t.id }, "upsert");
  const things = await thingEntries(doc.things);
  const outcomes = await registry.putThings(things, {
    mode: "upsert",
    provisioned: true,
    onProgress: (thingsDone, thingsTotal) => onProgress?.({ thingsDone, thingsTotal }),
  });
  const summary: ProvisionSummary = { things: { created: 0, updated: 0, unchanged: 0 } };
  outcomes.forEach((outcome, i) => {
    if (outcome.status === "failed") {
      throw new Error(`DMS_PROVISION: things.${i} (${things[i]!.thingName}): ${outcome.error.message}`);
    }
    summary.things[outcome.status]++;
  });
  for (const g of doc.thingGroups) await registry.putGroup({ ...g, name: g.name ?? g.id }, "upsert");
  return summary;
}

async function thingEntries(entries: unknown[]): Promise<z.output<typeof ThingEntrySchema>[]> {
  const things: z.output<typeof ThingEntrySchema>[] = [];
  for (let i = 0; i < entries.length; i++) {
    if (i > 0 && i % VALIDATE_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    const parsed = ThingEntrySchema.safeParse(entries[i]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`DMS_PROVISION: things.${[i, ...issue.path].join(".")}: ${issue.message}`);
    }
    things.push(parsed.data);
  }
  return things;
}
