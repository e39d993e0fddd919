import type { EventBus } from "../bus/index.js";
import type { Rule } from "../rule-model/index.js";
import type { RuleStore } from "./store.js";

/**
 * Every rule in memory, kept current from `rule.changed` (this process's changes
 * and, through the relay, other processes'): what the engine reads synchronously
 * when it starts, without asking a store that may be across the network.
 */
export class RuleCache {
  private readonly rules = new Map<string, Rule>();
  private readonly unfollow: () => void;
  /** Ids changed while the store is read, so that the older stored copy does not replace them. */
  private touched: Set<string> | undefined = new Set();

  private constructor(bus: EventBus) {
    this.unfollow = bus.follow("rule.changed", ({ id, rule }) => {
      this.touched?.add(id);
      if (rule) this.rules.set(id, rule);
      else this.rules.delete(id);
    });
  }

  /** Follows the bus, then reads the store: a change made while it reads wins over what it read. */
  static async open(store: RuleStore, bus: EventBus): Promise<RuleCache> {
    const cache = new RuleCache(bus);
    try {
      for (const rule of await store.all()) if (!cache.touched!.has(rule.id)) cache.rules.set(rule.id, rule);
    } catch (err) {
      cache.close();
      throw err;
    }
    cache.touched = undefined;
    return cache;
  }

  get(id: string): Rule | undefined {
    return this.rules.get(id);
  }

  /** Every rule, by id. */
  all(): Rule[] {
    return [...this.rules.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  close(): void {
    this.unfollow();
  }
}
