import type { StateStore, ThingState } from "../state.js";

/**
 * State in memory: the engine reads and mutates these objects in place and
 * calls `setThing` to mark one changed, so the hot path costs a set insert.
 * Subclasses persist what changed on `flush`.
 */
export class MemoryStateStore implements StateStore {
  protected readonly things = new Map<string, ThingState>();
  protected readonly dirty = new Set<ThingState>();

  thing(thingName: string): ThingState | undefined {
    return this.things.get(thingName);
  }

  setThing(state: ThingState): void {
    this.things.set(state.thingName, state);
    this.dirty.add(state);
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

  flush(): void {
    this.dirty.clear();
  }
}
