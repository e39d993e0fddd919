import { EventEmitter } from "node:events";
import type { Rule } from "../rule-model/index.js";

/** What changed in the registry; later parts (continuous jobs, search) subscribe. */
export interface BusEvents {
  "thingGroup.membership": { groupId: string; thingName: string; change: "added" | "removed" };
  "thingGroup.deleted": { groupId: string };
  /** A group was created, or its name or domain changed (its members change by `thingGroup.membership`). */
  "thingGroup.changed": { groupId: string };
  "domain.changed": { id: string; change: "created" | "updated" | "deleted" };
  "thingType.changed": { id: string; change: "created" | "updated" | "deleted" };
  "thing.changed": { thingName: string; change: "created" | "updated" | "deleted" };
  /** A rule was created or updated (`rule` set) or removed (`rule` null): the engine recompiles it. */
  "rule.changed": { id: string; rule: Rule | null };
  /** A user was created, changed or deleted: every process's principals must follow. */
  "user.changed": { userName: string; change: "created" | "updated" | "deleted" };
  /** An API key was added or deleted: every process's set of valid keys must follow. */
  "apiKey.changed": { change: "created" | "deleted" };
  /** Things whose pending job executions changed: the MQTT bridge tells their devices. */
  "jobs.pending": { things: string[] };
}

export type BusEventName = keyof BusEvents;

/** `remote`: the change was made by another process sharing the database (see `BusRelay`). */
export type Follower<K extends BusEventName> = (event: BusEvents[K], remote: boolean) => void;

/**
 * In-process, synchronous event bus with typed events, in two kinds of subscription:
 *
 * - `on`: changes this process made. For listeners that write to the shared
 *   database (continuous jobs adding executions): the process that made a
 *   change has already followed it there, once.
 * - `follow`: changes of this process and, through the relay, of every other
 *   process sharing the database. For listeners that keep memory current
 *   (compiled rules, caches, the search index), which each process has its own of.
 */
export class EventBus {
  private readonly local = new EventEmitter({ captureRejections: false });
  private readonly followers = new EventEmitter({ captureRejections: false });
  private outbound: (<K extends BusEventName>(name: K, event: BusEvents[K]) => void) | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor() {
    this.local.setMaxListeners(100);
    this.followers.setMaxListeners(100);
  }

  /**
   * A listener that returns a promise (a write to the database) is waited for by `settled`, so that
   * the operation that emitted the change answers only once what follows from it is stored.
   */
  on<K extends BusEventName>(name: K, listener: (event: BusEvents[K]) => unknown): () => void {
    const tracked = (event: BusEvents[K]): void => {
      const result = listener(event);
      if (!(result instanceof Promise)) return;
      this.inFlight.add(result);
      void result.finally(() => this.inFlight.delete(result));
    };
    this.local.on(name, tracked);
    return () => this.local.off(name, tracked);
  }

  /** Resolves once every promise the `on` listeners returned, for changes emitted so far and those they emit, has settled. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  follow<K extends BusEventName>(name: K, listener: Follower<K>): () => void {
    this.followers.on(name, listener);
    return () => this.followers.off(name, listener);
  }

  emit<K extends BusEventName>(name: K, event: BusEvents[K]): void {
    this.outbound?.(name, event);
    this.local.emit(name, event);
    this.followers.emit(name, event, false);
  }

  /** A change another process made, read by the relay: followers only. */
  deliverRemote<K extends BusEventName>(name: K, event: BusEvents[K]): void {
    this.followers.emit(name, event, true);
  }

  /** Where `emit` also sends every change (the relay's table); undefined detaches. */
  relayTo(outbound: (<K extends BusEventName>(name: K, event: BusEvents[K]) => void) | undefined): void {
    this.outbound = outbound;
  }
}
