import type { StateStore, ThingState } from "./store.js";

/**
 * State in memory: the engine reads and mutates these objects in place and
 * hands the changed ones to `flush`. Subclasses persist them there.
 */
export class MemoryStateStore implements StateStore {
  protected readonly things = new Map<string, ThingState>();
  /** Changed by `dropRule`, outside any batch. */
  protected readonly dirty = new Set<ThingState>();

  thing(thingName: string): ThingState | undefined {
    return this.things.get(thingName);
  }

  add(state: ThingState): void {
    this.things.set(state.thingName, state);
  }

  dropRule(ruleId: string): void {
    for (const t of this.things.values()) {
      const list = t.thresholds;
      if (list === undefined) continue;
      const i = list.findIndex((e) => e.ruleId === ruleId);
      if (i >= 0) {
        list.splice(i, 1);
        this.dirty.add(t);
      }
    }
  }

  flush(_changed: readonly ThingState[]): void {
    this.dirty.clear();
  }
}
