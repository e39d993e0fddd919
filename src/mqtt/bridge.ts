import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Aedes, type AuthenticateError, type Client, type PublishPacket } from "aedes";
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
  /** Resolves the answers once the request is handled; a device's requests are answered in their order. */
  handle(thingName: string, suffix: string, payload: Buffer): Promise<BridgeMessage[]>;
  notifications(thingName: string): Promise<BridgeMessage[]>;
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
/**
 * Pending TCP connections the kernel may queue: a reconnect storm must not be dropped at the door.
 * The kernel caps it at net.core.somaxconn (4096 by default): a fleet's host may raise that.
 */
const ACCEPT_BACKLOG = 65_535;
/**
 * How long aedes waits for a CONNECT once it has the connection (see `admit`: not while it waits in
 * our own queue). A device whose handshake completed late in a storm may have its CONNECT behind a
 * TCP retransmission timer backed off to a minute or more; closing it sooner only sends it back into
 * the storm (a run with 20 s: 1,678 devices retried and the storm took 148 s).
 */
const CONNECT_TIMEOUT_MS = 120_000;
/** Accepted connections handed to aedes per turn of the event loop (see `admit`). */
const ADMIT_SLICE = 32;
/** Turns in a row that only accept, while connections keep coming, before a slice is handed over anyway. */
const ACCEPT_ONLY_TURNS = 256;

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
  /** Connections accepted and not yet handed to aedes, oldest first, and how many of them went (see `admit`). */
  private admitting: Socket[] = [];
  private admitted = 0;
  private acceptedSinceTurn = 0;
  private acceptOnlyTurns = 0;
  private admitTurnScheduled = false;
  private readonly received: Counter<"kind">;
  /**
   * Device observations taken since the last scrape: counted as a number and added to `received` when
   * it is collected, because a labelled counter hashes its labels on every increment.
   */
  private observationsTaken = 0;
  private readonly sent: Counter;
  private readonly connected: Gauge;

  constructor(private readonly options: DeviceBridgeOptions) {
    const registers = options.registry ? [options.registry] : [];
    this.received = new Counter({
      name: "dms_mqtt_device_messages_total",
      help: "Device messages the bridge handled, by kind (jobs request or observation)",
      labelNames: ["kind"],
      registers,
      collect: () => {
        if (this.observationsTaken === 0) return;
        this.received.inc({ kind: "observation" }, this.observationsTaken);
        this.observationsTaken = 0;
      },
    });
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
    setImmediate(() => void this.drainSlice());
  }

  private async drainSlice(): Promise<void> {
    let n = 0;
    for (const thingName of this.notifyQueue) {
      this.notifyQueue.delete(thingName);
      try {
        this.publish(await this.options.jobs.notifications(thingName));
      } catch (err) {
        this.options.logger.error({ err, thingName }, "job notification failed");
      }
      if (++n >= NOTIFY_SLICE) break;
    }
    this.draining = false;
    this.scheduleDrain();
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
    this.options.jobs
      .handle(thingName, parts.slice(3).join("/"), payload)
      .then((answers) => this.publish(answers))
      .catch((err: unknown) => this.options.logger.error({ err, topic }, "device jobs request failed"));
  }

  /** Hands one device publish to the observation handler; undefined when this process takes none. */
  private take(thingName: string, payload: Buffer): Promise<void> | undefined {
    if (!this.observations) return undefined;
    this.observationsTaken++;
    return this.observations(thingName, payload);
  }

  private async listenEmbedded(): Promise<void> {
    const broker = new DeviceBroker({
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
        const taken = isObservationTopic(client.id, packet.topic)
          ? this.take(client.id, asBuffer(packet.payload))
          : undefined;
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
    await broker.listen();
    broker.on("client", (client) => this.sessions.set(client.id, client));
    broker.on("clientDisconnect", (client) => {
      if (this.sessions.get(client.id) === client) this.sessions.delete(client.id);
    });
    broker.on("publish", (packet, client) => {
      // Observations were taken while authorizing, before the PUBACK.
      if (!client || isObservationTopic(client.id, packet.topic)) return;
      // Answered on a later turn: publishing from inside aedes' delivery chain nests one stack frame
      // chain per queued message, and a burst of thousands overflows the stack.
      const topic = packet.topic;
      const payload = Buffer.from(packet.payload);
      setImmediate(() => this.route(topic, payload));
    });
    // No Nagle: a CONNACK or a reply is one small write that should leave now, not after the peer's ACK.
    // Paused until aedes has it: a connection waiting in our queue costs no read meanwhile (see `admit`).
    const server = createServer({ noDelay: true, pauseOnConnect: true }, (socket) => this.admit(socket, broker));
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
   * Takes an accepted connection at once and hands it to aedes on a later turn of the event loop.
   * libuv (1.45 on, so Node 20) accepts one connection per turn of the loop, so in a connect storm the
   * kernel's accept queue (ACCEPT_BACKLOG, at most net.core.somaxconn) drains only as fast as the loop
   * turns; when it overflows, a connect is tried again by the device's TCP only after 1, 3, 7, 15...
   * s, and one whose handshake completes late leaves its CONNECT behind a retransmission timer backed
   * off to a minute or two. Handing each connection to aedes as it came (its client, parser and
   * streams, then its CONNECT, authentication and CONNACK over the next turns) made every turn carry
   * the work of all connections in flight: measured, the queue stayed full for 45 s of a 10,000-device
   * storm. So a turn that accepted a connection hands none over (up to ACCEPT_ONLY_TURNS in a row):
   * turns stay short while connections keep coming, the kernel's queue drains, and the connections
   * wait here instead, paused (`pauseOnConnect`), where waiting costs nothing; then ADMIT_SLICE per turn.
   */
  private admit(socket: Socket, broker: Aedes): void {
    // Until aedes has it (it listens for errors from then on): a reset must not be an uncaught error.
    socket.on("error", () => {});
    this.admitting.push(socket);
    this.acceptedSinceTurn++;
    if (this.admitTurnScheduled) return;
    this.admitTurnScheduled = true;
    const turn = (): void => {
      if (this.acceptedSinceTurn > 0 && this.acceptOnlyTurns < ACCEPT_ONLY_TURNS) {
        this.acceptOnlyTurns++;
        this.acceptedSinceTurn = 0;
        setImmediate(turn);
        return;
      }
      this.acceptOnlyTurns = 0;
      this.acceptedSinceTurn = 0;
      const end = Math.min(this.admitted + ADMIT_SLICE, this.admitting.length);
      for (; this.admitted < end; this.admitted++) {
        const next = this.admitting[this.admitted]!;
        if (!next.destroyed && !broker.closed) broker.handle(next);
        else next.destroy();
      }
      if (this.admitted < this.admitting.length) {
        setImmediate(turn);
      } else {
        this.admitting = [];
        this.admitted = 0;
        this.admitTurnScheduled = false;
      }
    };
    setImmediate(turn);
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

// Both are asked for every device publish: compared in place rather than by building the topic.
const THINGS = "things/";
const OBSERVATIONS = "/observations";

/** `topic` is `things/{thingName}/observations`. */
function isObservationTopic(thingName: string, topic: string): boolean {
  return (
    topic.length === THINGS.length + thingName.length + OBSERVATIONS.length &&
    topic.startsWith(THINGS) &&
    topic.startsWith(thingName, THINGS.length) &&
    topic.endsWith(OBSERVATIONS)
  );
}

/** `topic` is below `things/{thingName}/`. */
function ownTopic(thingName: string, topic: string): boolean {
  const end = THINGS.length + thingName.length;
  return (
    topic.length > end + 1 &&
    topic.startsWith(THINGS) &&
    topic.startsWith(thingName, THINGS.length) &&
    topic.charCodeAt(end) === 47 // "/"
  );
}

type PublishDone = (error?: Error) => void;

/**
 * aedes, less the routing of the device observations nobody subscribed to. aedes routes every publish
 * after its PUBACK: a packet copy, a look-up of the persistent sessions' subscriptions and another of
 * the live ones (both tries of the topic's words), a chain of callbacks and promises and the `publish`
 * event, about a fifth of the broker's JavaScript per observation (bench/fleet ingest profile). An
 * observation is taken before that (in `authorizePublish`), and only its own device may subscribe to
 * `things/{thingName}/observations` (see `ownTopic`; thing names have no wildcards): so it is routed
 * as before only when the device that publishes it has a subscription that matches it.
 */
class DeviceBroker extends Aedes {
  override publish(packet: PublishPacket, client: Client | PublishDone | null, done?: PublishDone): void {
    if (client && typeof client === "object" && isObservationTopic(client.id, packet.topic)) {
      if (!hearsItself(client, packet.topic)) return done?.();
    }
    // @ts-expect-error aedes' handlers call publish(packet, client, done); its types know only publish(packet, done).
    super.publish(packet, client, done);
  }
}

/**
 * Whether one of `client`'s subscriptions matches `topic`. aedes keeps them (restored sessions
 * included) in `client.subscriptions`, by filter; its types leave it out. Unknown: assumed so.
 */
function hearsItself(client: Client, topic: string): boolean {
  const filters = (client as Client & { subscriptions?: Record<string, unknown> }).subscriptions;
  if (filters === undefined) return true;
  for (const filter in filters) if (matchesFilter(filter, topic)) return true;
  return false;
}

/** MQTT topic filter matching (`+` one level, `#` the rest), for the few filters of one device. */
function matchesFilter(filter: string, topic: string): boolean {
  const want = filter.split("/");
  const have = topic.split("/");
  for (let i = 0; i < want.length; i++) {
    if (want[i] === "#") return true;
    if (i >= have.length || (want[i] !== "+" && want[i] !== have[i])) return false;
  }
  return want.length === have.length;
}

function asBuffer(payload: string | Buffer): Buffer {
  return typeof payload === "string" ? Buffer.from(payload) : payload;
}

function authError(returnCode: number): AuthenticateError {
  return Object.assign(new Error("Connection refused"), { returnCode }) as AuthenticateError;
}
