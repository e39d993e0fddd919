/** Where the condition is registered (`Readiness`). */
export interface ConditionRegistry {
  register(name: string, waitingFor: string): { ready(): void; waiting(detail: string): void };
}

export interface ProbeOptions {
  /** The condition's name in `/readyz`. */
  name: string;
  /** Resolves when what the condition stands for answers; throws (or takes longer than `timeoutMs`) when not. */
  probe: () => Promise<void>;
  everyMs: number;
  timeoutMs: number;
  /** Told when the condition changes: `err` is why it is no longer met, undefined when met again. */
  onChange?: (err: Error | undefined) => void;
}

/**
 * A readiness condition kept by asking, every `everyMs`, whether something outside the process
 * answers (the database): not met from the first probe that fails or does not answer in time until
 * one succeeds again. No probe starts while the one before is still unanswered, so that probes
 * never pile up on a server that does not answer.
 */
export class ProbedCondition {
  private readonly condition;
  private timer: NodeJS.Timeout | undefined;
  /** The probe asked last, until it answers. */
  private unanswered: Promise<void> | undefined;
  private met: boolean | undefined;

  constructor(
    readiness: ConditionRegistry,
    private readonly options: ProbeOptions,
  ) {
    this.condition = readiness.register(options.name, "not probed yet");
  }

  /** Probes once (resolves when it is answered, met or not), then every `everyMs`. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.options.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.unanswered?.catch(() => undefined);
  }

  private async check(): Promise<void> {
    const { probe, timeoutMs } = this.options;
    if (this.unanswered) return this.failed(new Error(`no answer for over ${timeoutMs} ms`));
    const asked = probe();
    this.unanswered = asked;
    void asked.then(
      () => this.answered(asked),
      () => this.answered(asked),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([asked, late]);
      this.succeeded();
    } catch (e) {
      this.failed(e instanceof Error ? e : new Error(String(e)));
    } finally {
      clearTimeout(timer);
    }
  }

  private answered(asked: Promise<void>): void {
    if (this.unanswered === asked) this.unanswered = undefined;
  }

  private succeeded(): void {
    if (this.met === true) return;
    this.condition.ready();
    if (this.met === false) this.options.onChange?.(undefined);
    this.met = true;
  }

  private failed(err: Error): void {
    this.condition.waiting(`unreachable: ${err.message || err.name}`);
    if (this.met !== false) this.options.onChange?.(err);
    this.met = false;
  }
}
