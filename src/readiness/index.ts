/**
 * Readiness: named conditions the service waits for before it should take
 * traffic (`GET /readyz`), apart from liveness (`GET /healthz`: the process
 * answers). Any part registers its own condition and says when it is met or
 * no longer met: provisioning and the start of components register here, and
 * so can Kafka topics, a lost broker, and so on.
 *
 *   const topics = readiness.register("kafka-topics", "creating dms.observations");
 *   topics.waiting("waiting for partition leaders");
 *   topics.ready();
 */

export { ProbedCondition, type ProbeOptions } from "./probe.js";

export interface ReadinessCondition {
  readonly name: string;
  /** Not met (again): `detail` says what it waits for. */
  waiting(detail: string): void;
  ready(): void;
}

export interface ConditionStatus {
  name: string;
  ready: boolean;
  /** What it waits for (while not ready). */
  detail?: string;
}

export interface ReadinessStatus {
  ready: boolean;
  conditions: ConditionStatus[];
}

export class Readiness {
  private readonly conditions = new Map<string, { ready: boolean; detail: string }>();
  private wasReady = false;

  /** A new condition, not met until its `ready()`; registering a name twice is a programming error. */
  register(name: string, waitingFor: string): ReadinessCondition {
    if (this.conditions.has(name)) throw new Error(`readiness condition ${name} registered twice`);
    const state = { ready: false, detail: waitingFor };
    this.conditions.set(name, state);
    return {
      name,
      waiting: (detail) => {
        state.ready = false;
        state.detail = detail;
      },
      ready: () => {
        state.ready = true;
        state.detail = "";
      },
    };
  }

  /**
   * Whether every condition has been met at once at least once: the end of
   * starting. It stays true when a condition goes back to waiting later (a lost
   * broker), since what starting sets up (provisioning, rules loaded) stays.
   */
  started(): boolean {
    if (!this.wasReady) this.wasReady = [...this.conditions.values()].every((c) => c.ready);
    return this.wasReady;
  }

  status(): ReadinessStatus {
    const conditions = [...this.conditions].map(([name, s]): ConditionStatus =>
      s.ready ? { name, ready: true } : { name, ready: false, detail: s.detail },
    );
    return { ready: conditions.every((c) => c.ready), conditions };
  }
}
