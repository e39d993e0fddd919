import { EventEmitter } from "node:events";
import type { Rule } from "../rules/index.js";

/** What changed in the registry; later parts (continuous jobs, search) subscribe. */
export interface BusEvents {
  "thingGroup.membership": { groupId: string; thingName: string; change: "added" | "removed" };
  "thingGroup.deleted": { groupId: string };
  "domain.changed": { id: string; change: "created" | "updated" | "deleted" };
  "thingType.changed": { id: string; change: "created" | "updated" | "deleted" };
  "thing.changed": { thingName: string; change: "created" | "updated" | "deleted" };
  /** A rule was created or updated (`rule` set) or removed (`rule` null): the engine recompiles it. */
  "rule.changed": { id: string; rule: Rule | null };
}

export type BusEventName = keyof BusEvents;

/** In-process, synchronous event bus with typed events. */
export class EventBus {
  private readonly emitter = new EventEmitter({ captureRejections: false });

  constructor() {
    this.emitter.setMaxListeners(100);
  }

  on<K extends BusEventName>(name: K, listener: (event: BusEvents[K]) => void): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  emit<K extends BusEventName>(name: K, event: BusEvents[K]): void {
    this.emitter.emit(name, event);
  }
}
