import { randomBytes } from "node:crypto";
import { Identity, type Principal } from "../../src/auth/index.js";
import { EventBus } from "../../src/bus/index.js";
import { ApiError } from "../../src/errors/index.js";
import { createLogger, type Logger } from "../../src/observability/index.js";
import { provision, type Provision } from "../../src/provision/index.js";
import { UrlSigner } from "../../src/signing/index.js";
import type { Db } from "../../src/store/index.js";
import { openSqliteStores, type Stores } from "../../src/stores.js";
import { ThingRegistry } from "../../src/things/index.js";
import { BASE_PROVISION } from "./provision.js";

/**
 * The shared parts a capability is made from, without a running service: every store on an
 * in-memory database, the bus, identity and registry holding `BASE_PROVISION` (plus `extra`), a URL signer.
 */
export interface Parts {
  stores: Stores;
  db: Db;
  bus: EventBus;
  identity: Identity;
  registry: ThingRegistry;
  signer: UrlSigner;
  clock: () => number;
  logger: Logger;
  /** The principal of a provisioned user. */
  as(userName: string): Principal;
  close(): Promise<void>;
}

export async function openParts(extra: Partial<Provision> = {}): Promise<Parts> {
  const stores = openSqliteStores({
    config: { DMS_DATA_DIR: ":memory:", DMS_ENGINE_STATE_THREAD: false, ruleIdPrefix: "dev" },
    engine: false,
    clock: Date.now,
  });
  const db = stores.sqlite!;
  const bus = new EventBus();
  const identity = await Identity.open(stores.identity, bus);
  const registry = await ThingRegistry.open(stores.things, bus, (id) => identity.domain(id) !== undefined);
  const document: Provision = { ...BASE_PROVISION };
  for (const [key, value] of Object.entries(extra)) {
    const k = key as keyof Provision;
    (document as Record<string, unknown>)[k] = [...((BASE_PROVISION[k] as unknown[]) ?? []), ...(value as unknown[])];
  }
  await provision(document, { identity, registry });
  return {
    stores,
    db,
    bus,
    identity,
    registry,
    signer: new UrlSigner({ key: randomBytes(32), baseUrl: "http://127.0.0.1:1" }),
    clock: Date.now,
    logger: createLogger("silent"),
    as: (userName) => {
      const principal = identity.principal(userName);
      if (!principal) throw new Error(`no user ${userName}`);
      return principal;
    },
    close: () => {
      registry.close();
      return stores.close();
    },
  };
}

/** The error key `act` is refused with (an ApiError); fails when it is not refused. */
/** The error key `act` refuses with, whether it throws or its promise rejects. */
export async function refusal(act: () => unknown): Promise<string> {
  try {
    await act();
  } catch (err) {
    if (err instanceof ApiError) return err.key;
    throw err;
  }
  throw new Error("not refused");
}
