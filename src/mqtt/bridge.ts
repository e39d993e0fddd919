import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Aedes, type AuthenticateError, type Client } from "aedes";
import mqtt, { type MqttClient } from "mqtt";
import { Counter, Gauge, type Registry } from "prom-client";
import type { EventBus } from "../bus/index.js";
import type { Logger } from "../observability/index.js";

/** An MQTT message to publish; the payload is sent as JSON. */
export interface BridgeMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/** The device side of thing jobs, as the bridge needs it (src/jobs `DeviceJobs` and `ThingJobs`). */
export interface DeviceJobsEndpoint {
  handle(thingName: string, suffix: string, payload: Buffer): BridgeMessage[];
  notifications(thingName: string): BridgeMessage[];
  onPendingChanged(listener: (thingNames: ReadonlySet<string>) => void): () => void;
}

/**
 * Takes one device publish on `things/{thingName}/observations`; resolves once
 * it is durably accepted (stored and evaluated, or acknowledged by Kafka). The
 * embedded broker sends a QoS 1 PUBACK only then; a rejection drops the
 * device's connection unacknowledged, so the device publishes it again.
 */
export type ObservationHandler = (thingName: string, payload: Buffer) => Promise<void>;

export interface DeviceBridgeOptions {
  /** External broker; unset: the embedded aedes broker listens on `port`. */
  mqttUrl?: string | undefined;
  port: number;
  host: string;
  jobs: DeviceJobsEndpoint;
  /** Whether the secret is the thing's; may throw `busy()`-marked errors when it cannot check now. */
  verifyThingSecret(thingName: string, secret: string): Promise<boolean>;
  /** An error of `verifyThingSecret` meaning "try later" (CONNACK 3), not "refused". */
  isBusy?: (err: unknown) => boolean;
  bus: EventBus;
  logger: Logger;
  /** Where the bridge registers its metrics (`metrics.registry`). */
  registry?: Registry;
}

const REPLY = /\/(accepted|rejected|notify|notify-next)$/;
const NOTIFY_SLICE = 500;
const BAD_CREDENTIALS = 4;
const IDENTIFIER_REJECTED = 2;
const SERVER_UNAVAILABLE = 3;
/** Pending TCP connections the kernel may queue: a reconnect storm must not be dropped at the door. */
const ACCEPT_BACKLOG = 4096;
const CONNECT_TIMEOUT_MS = 120_000;
/** Accepted connections handed to aedes per turn of the event loop (see `admit`). */
const ADMIT_SLICE = 100;

/**
 * The device MQTT bridge: routes `things/{thingName}/jobs/...` requests to the
 * jobs' device side, publishes its answers and notifications, and hands
 * `things/{thingName}/observations` payloads to the observation handler.
 */
export class DeviceBridge {
  readonly name = "mqtt-bridge";
  private observations: ObservationHandler | undefined;
  private broker: Aedes | undefined;
  private server: Server | undefined;
  private client: MqttClient | undefined;
  private unsubscribe: (() => void)[] = [];
  private boundPort: number | undefined;
  /** Connected devices of the embedded broker by thingName (= client id). */
  private readonly sessions = new Map<string, Client>();
  private readonly notifyQueue = new Set<string>();
  private draining = false;
  /** Connections accepted and not yet handed to aedes, oldest first (see `admit`). */
  private admitting: Socket[] = [];
  private admitted = 0;
  private readonly received: Counter<"kind">;
  /** The observations' child of `received`, looked up once: it is counted for every device publish. */
  private readonly receivedObservations: { inc(): void };
  private readonly sent: Counter;
  private readonly connected: Gauge;

  constructor(private readonly options: DeviceBridgeOptions) {
    const registers = options.registry ? [options.registry] : [];
    this.received = new Counter({
      name: "dms_mqtt_device_messages_total",
      help: "Device messages the bridge handled, by kind (jobs request or observation)",
      labelNames: ["kind"],
      registers,
    });
    this.receivedObservations = this.received.labels("observation");
    this.sent = new Counter({
      name: "dms_mqtt_published_total",
      help: "Replies and notifications the bridge published to devices",
      registers,
    });
    this.connected = new Gauge({
      name: "dms_mqtt_connected_devices",
      help: "Devices connected to the embedded broker",
      registers,
      collect: () => this.connected.set(this.connectedDevices),
    });
  }

  /** Where device observations go (the rule engine's embedded source). */
  onObservations(handler: ObservationHandler): void {
    this.observations = handler;
  }

  /** Devices connected to the embedded broker now (0 with an external broker). */
  get connectedDevices(): number {
    return this.broker?.connectedClients ?? 0;
  }

  /** The embedded broker's port once started. */
  get port(): number | undefined {
    return this.boundPort;
  }

  async start(): Promise<void> {
    const { jobs, bus } = this.options;
    this.unsubscribe.push(
      jobs.onPendingChanged((things) => {
        for (const t of things) this.notifyQueue.add(t);
        this.scheduleDrain();
      }),
      // A deleted thing's device loses its session at once, not at its next connect.
      bus.follow("thing.changed", (e) => {
        if (e.change === "deleted") this.sessions.get(e.thingName)?.close();
      }),
    );
    if (this.options.mqttUrl) await this.connectExternal(this.options.mqttUrl);
    else await this.listenEmbedded();
  }

  async stop(): Promise<void> {
    for (const u of this.unsubscribe) u();
    this.unsubscribe = [];
    this.notifyQueue.clear();
    if (this.client) await this.client.endAsync(true);
    if (this.broker) await new Promise<void>((resolve) => this.broker!.close(() => resolve()));
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.client = undefined;
    this.broker = undefined;
    this.server = undefined;
  }

  publish(messages: BridgeMessage[]): void {
    this.sent.inc(messages.length);
    for (const m of messages) {
      const payload = Buffer.from(JSON.stringify(m.payload));
      if (this.client) {
        this.client.publish(m.topic, payload, { qos: 1 }, (err) => {
          if (err) this.options.logger.warn({ err, topic: m.topic }, "MQTT publish failed");
        });
      } else if (this.broker) {
        this.broker.publish({ cmd: "publish", topic: m.topic, payload, qos: 1, retain: false, dup: false }, (err) => {
          if (err) this.options.logger.warn({ err, topic: m.topic }, "MQTT publish failed");
        });
      }
    }
  }

  /**
   * Notifications leave in slices of NOTIFY_SLICE things per turn of the event
   * loop: a job to ten thousand things would otherwise hold the loop (and the
   * REST request that created it) for all twenty thousand publishes. Each
   * notification is built when sent, so it carries the then current state.
   */
  private scheduleDrain(): void {
    if (this.draining || this.notifyQueue.size === 0) return;
    this.draining = true;
    setImmediate(() => {
      this.draining = false;
      let n = 0;
      for (const thingName of this.notifyQueue) {
        this.notifyQueue.delete(thingName);
        try {
          this.publish(this.options.jobs.notifications(thingName));
        } catch (err) {
          this.options.logger.error({ err, thingName }, "job notification failed");
        }
        if (++n >= NOTIFY_SLICE) break;
      }
      this.scheduleDrain();
    });
  }

  /** A device message on `topic`, already authorized (embedded) or trusted to the external broker. */
  private route(topic: string, payload: Buffer): void {
    const parts = topic.split("/");
    if (parts[0] !== "things" || parts.length < 3 || !parts[1]) return;
    const thingName = parts[1];
    if (parts[2] === "observations" && parts.length === 3) {
      // From the external broker only (the embedded one takes them before its PUBACK): the bridge
      // subscribes at QoS 0 there, so nobody waits for the outcome but the log.
      this.take(thingName, payload)?.catch((err: unknown) => {
        this.options.logger.error({ err, thingName }, "device observations not taken");
      });
      return;
    }
    if (parts[2] !== "jobs" || parts.length < 4 || REPLY.test(topic)) return;
    this.received.inc({ kind: "jobs" });
    try {
      this.publish(this.options.jobs.handle(thingName, parts.slice(3).join("/"), payload));
    } catch (err) {
      this.options.logger.error({ err, topic }, "device jobs request failed");
    }
  }

  /** Hands one device publish to the observation handler; undefined when this process takes none. */
  private take(thingName: string, payload: Buffer): Promise<void> | undefined {
    if (!this.observations) return undefined;
    this.receivedObservations.inc();
    return this.observations(thingName, payload);
  }

  private async listenEmbedded(): Promise<void> {
    const broker = await Aedes.createBroker({
      // aedes drops a socket whose CONNECT it has not read within this time; in a reconnect storm of
      // thousands the wait is in our own accept queue, and a dropped device only comes back again.
      connectTimeout: CONNECT_TIMEOUT_MS,
      authenticate: (client, username, password, done) => {
        this.authenticate(client, username, password).then(
          (code) => (code === 0 ? done(null, true) : done(authError(code), false)),
          (err: unknown) => {
            if (this.options.isBusy?.(err)) return done(authError(SERVER_UNAVAILABLE), false);
            this.options.logger.error({ err }, "MQTT authentication failed");
            done(authError(BAD_CREDENTIALS), false);
          },
        );
      },
      authorizePublish: (client, packet, done) => {
        if (!client || !ownTopic(client.id, packet.topic) || REPLY.test(packet.topic)) {
          return done(new Error(`${client?.id ?? "?"} may not publish on ${packet.topic}`));
        }
        // aedes writes a QoS 1 PUBACK right after this callback: an observation is taken here, and
        // the callback waits until its group commit is durable. The device's next packets wait
        // with it, which keeps its observations in order and is the backpressure on a fast device.
        // The parser's payload is a slice of the socket's reads, which Node never reuses: taken as it
        // is, not copied once more per observation.
        const taken =
          packet.topic === observationTopic(client.id) ? this.take(client.id, asBuffer(packet.payload)) : undefined;
        if (!taken) return done(null);
        taken.then(
          () => done(null),
          (err: unknown) => {
            this.options.logger.error({ err, thingName: client.id }, "device observations not taken");
            done(new Error(`observations of ${client.id} not taken`));
          },
        );
      },
      authorizeSubscribe: (client, sub, done) => {
        // A refused filter is granted 0x80 (failure) rather than dropping the connection.
        done(null, ownTopic(client.id, sub.topic) ? sub : null);
      },
    });
    broker.on("client", (client) => this.sessions.set(client.id, client));
    broker.on("clientDisconnect", (client) => {
      if (this.sessions.get(client.id) === client) this.sessions.delete(client.id);
    });
    broker.on("publish", (packet, client) => {
      // Observations were taken while authorizing, before the PUBACK.
      if (!client || packet.topic === observationTopic(client.id)) return;
      // Answered on a later turn: publishing from inside aedes' delivery chain nests one stack frame
      // chain per queued message, and a burst of thousands overflows the stack.
      const topic = packet.topic;
      const payload = Buffer.from(packet.payload);
      setImmediate(() => this.route(topic, payload));
    });
    // No Nagle: a CONNACK or a reply is one small write that should leave now, not after the peer's ACK.
    const server = createServer({ noDelay: true }, (socket) => this.admit(socket, broker));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ port: this.options.port, host: this.options.host, backlog: ACCEPT_BACKLOG }, () => resolve());
    });
    this.broker = broker;
    this.server = server;
    this.boundPort = (server.address() as AddressInfo).port;
    this.options.logger.info({ port: this.boundPort }, "embedded MQTT broker listening");
  }

  /**
   * Takes an accepted connection at once and hands it to aedes on a later turn, ADMIT_SLICE per turn.
   * In a connect storm the kernel's accept queue (ACCEPT_BACKLOG, at most net.core.somaxconn) must
   * never overflow: a connection dropped there is tried again by the device's TCP only after 1, 3, 7,
   * 15... s, and one whose handshake completes late leaves its CONNECT behind a retransmission timer
   * backed off to a minute or two. Handing every accepted connection to aedes at once (its client,
   * parser and streams, then its CONNECT, authentication and CONNACK) kept the loop from accepting
   * for as long as thousands took; now the queue that grows is this one, where waiting costs nothing.
   */
  private admit(socket: Socket, broker: Aedes): void {
    // Until aedes has it (it listens for errors from then on): a reset must not be an uncaught error.
    socket.on("error", () => {});
    this.admitting.push(socket);
    if (this.admitting.length > 1) return;
    const handOver = (): void => {
      const end = Math.min(this.admitted + ADMIT_SLICE, this.admitting.length);
      for (; this.admitted < end; this.admitted++) {
        const next = this.admitting[this.admitted]!;
        if (!next.destroyed && !broker.closed) broker.handle(next);
        else next.destroy();
      }
      if (this.admitted < this.admitting.length) {
        setImmediate(handOver);
      } else {
        this.admitting = [];
        this.admitted = 0;
      }
    };
    setImmediate(handOver);
  }

  private async connectExternal(url: string): Promise<void> {
    const client = await mqtt.connectAsync(url, {
      clientId: `dms-bridge-${process.pid}-${Date.now().toString(36)}`,
      reconnectPeriod: 1000,
    });
    client.on("message", (topic, payload) => this.route(topic, payload));
    client.on("error", (err) => this.options.logger.warn({ err }, "MQTT bridge client error"));
    // Only request topics: `things/+/jobs/#` would also bring back every reply and notification the
    // bridge itself publishes. QoS 0 because a broker's per-client queue (Mosquitto: 1000 QoS 1
    // messages) drops a burst of thousands of requests; devices retry a request that got no answer,
    // as with AWS IoT Jobs, and observations are fire-and-forget telemetry.
    await client.subscribeAsync(
      [
        "things/+/jobs/get",
        "things/+/jobs/start-next",
        "things/+/jobs/+/get",
        "things/+/jobs/+/update",
        "things/+/observations",
      ],
      { qos: 0 },
    );
    this.client = client;
    this.options.logger.info({ url }, "MQTT bridge connected to external broker");
  }

  /** 0 when accepted, else the CONNACK return code. Client id and user name must both be the thingName. */
  private async authenticate(
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
  ): Promise<number> {
    if (!username || !password) return BAD_CREDENTIALS;
    if (client.id !== username) return IDENTIFIER_REJECTED;
    // Cached and cheap where the secret allows it (src/things/credentials.ts).
    return (await this.options.verifyThingSecret(username, password.toString("utf8"))) ? 0 : BAD_CREDENTIALS;
  }
}

function observationTopic(thingName: string): string {
  return `things/${thingName}/observations`;
}

function ownTopic(thingName: string, topic: string): boolean {
  const prefix = `things/${thingName}/`;
  return topic.startsWith(prefix) && topic.length > prefix.length;
}

function asBuffer(payload: string | Buffer): Buffer {
  return typeof payload === "string" ? Buffer.from(payload) : payload;
}

function authError(returnCode: number): AuthenticateError {
  return Object.assign(new Error("Connection refused"), { returnCode }) as AuthenticateError;
}
