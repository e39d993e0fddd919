import type { DeadLetterStore } from "../dead-letters/index.js";
import { decodeDevicePayload } from "../decode.js";
import type { Ingested } from "../decode.js";
import { deadLetter } from "../checks.js";
import type { ObservationIngest } from "../ingest.js";
import type { ObservationSource } from "./source.js";
import type { RawObservation } from "../types.js";
import { GroupCommit, type GroupCommitOptions } from "./group-commit.js";

/**
 * What the source needs of the device MQTT bridge (src/mqtt `DeviceBridge`): the publishes on
 * `things/{thingName}/observations`. The returned promise is the device's acknowledgement: the
 * embedded broker sends a QoS 1 PUBACK once it resolves, and drops the connection unacknowledged
 * when it rejects (the device publishes again).
 */
export interface DevicePublishes {
  onObservations(handler: (thingName: string, payload: Buffer) => Promise<void>): void;
}

/**
 * The MQTT source: device observations from the embedded broker, or from the broker at `MQTT_URL`,
 * handed over in group commits. What devices publish while one batch is being handled goes in the
 * next, so the batch grows with the load and an idle service hands over a lone publish at once;
 * each publish resolves (and is acknowledged) only once the batch that holds it was handled.
 *
 * A raw observation's `key` is the device, the thing of the topic: a device speaks only for itself,
 * which `deviceIngest` decodes accordingly.
 */
export class MqttObservationSource implements ObservationSource {
  readonly name = "mqtt";
  private batches: GroupCommit<RawObservation> | undefined;

  constructor(
    private readonly bridge: DevicePublishes,
    private readonly options: GroupCommitOptions = {},
  ) {}

  async start(handle: (batch: readonly RawObservation[]) => Promise<void>): Promise<void> {
    const batches = new GroupCommit<RawObservation>(handle, this.options);
    this.batches = batches;
    const position = { source: this.name };
    this.bridge.onObservations((thingName, payload) => batches.add({ key: thingName, value: payload, position }));
  }

  /** Refuses what arrives from now on (unacknowledged), and waits for the batches under way. */
  async stop(): Promise<void> {
    this.bridge.onObservations(() => Promise.reject(new Error("the MQTT source is stopped")));
    await this.batches?.flushed();
    this.batches = undefined;
  }
}

export interface DeviceIngestOptions {
  /** The observations topic's producer, when Kafka is on. */
  topic?: ObservationIngest | undefined;
  /** This process's engine (`EngineService.accept`), used without Kafka. */
  engine?: ((batch: readonly Ingested[]) => Promise<unknown>) | undefined;
  deadLetters: DeadLetterStore;
  /** The domain of a known thing: who may read its dead letters. */
  domainOf: (thingName: string) => string | undefined;
  clock: () => number;
}

/**
 * Where the MQTT source's batches go, decoded as their devices' (`decodeDevicePayload`): with
 * Kafka, the observations to the topic and the refusals to this process's dead letters (nothing
 * the decode refused goes on, to be read differently elsewhere); without Kafka, both to this
 * process's engine. Undefined when neither is there: device observations are not taken.
 */
export function deviceIngest(
  options: DeviceIngestOptions,
): ((batch: readonly RawObservation[]) => Promise<void>) | undefined {
  const { topic, engine, deadLetters, domainOf, clock } = options;
  const decode = (batch: readonly RawObservation[]): Ingested[] =>
    batch.flatMap((raw) => decodeDevicePayload(raw.key ?? "", raw.value, raw.position));
  if (topic === undefined) {
    if (engine === undefined) return undefined;
    return async (batch) => {
      await engine(decode(batch));
    };
  }
  return async (batch) => {
    const letters = [];
    const observations = [];
    for (const item of decode(batch)) {
      if (item.observation !== undefined) {
        observations.push(item.observation);
        continue;
      }
      const { reason, message, thingName } = item.refusal;
      const domain = thingName === undefined ? undefined : domainOf(thingName);
      letters.push(deadLetter(item, reason, message, clock(), thingName, domain));
    }
    if (letters.length > 0) await deadLetters.insertBatch(letters);
    await topic(observations, "mqtt");
  };
}
