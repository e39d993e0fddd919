import type { StateStore, ThingState, ThresholdState } from "../state.js";

/**
 * State in memory: the engine reads and mutates these objects in place and
 * calls `setThing`/`setThreshold` to mark them changed, so the hot path costs
 * a map lookup and a set insert. Subclasses persist what changed on `flush`.
 */
export class MemoryStateStore implements StateStore {
  protected readonly things = new Map<string, ThingState>();
  protected readonly thresholds = new Map<string, Map<string, ThresholdState>>();
  protected readonly dirtyThings = new Set<ThingState>();
  protected readonly dirtyThresholds = new Map<ThresholdState, [ruleId: string, thingName: string]>();
  protected readonly droppedRules = new Set<string>();

  thing(thingName: string): ThingState | undefined {
    return this.things.get(thingName);
  }

  setThing(state: ThingState): void {
    this.things.set(state.thingName, state);
    this.dirtyThings.add(state);
  }

  threshold(ruleId: string, thingName: string): ThresholdState | undefined {
    return this.thresholds.get(thingName)?.get(ruleId);
  }

  setThreshold(ruleId: string, thingName: string, state: ThresholdState): void {
    let perThing = this.thresholds.get(thingName);
    if (perThing === undefined) this.thresholds.set(thingName, (perThing = new Map()));
    perThing.set(ruleId, state);
    this.dirtyThresholds.set(state, [ruleId, thingName]);
  }

  dropRule(ruleId: string): void {
    for (const perThing of this.thresholds.values()) {
      const state = perThing.get(ruleId);
      if (state !== undefined) {
        perThing.delete(ruleId);
        this.dirtyThresholds.delete(state);
      }
    }
    this.droppedRules.add(ruleId);
  }

  flush(): void {
    this.dirtyThings.clear();
    this.dirtyThresholds.clear();
    this.droppedRules.clear();
  }
}
