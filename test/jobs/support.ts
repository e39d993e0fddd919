import mqtt, { type MqttClient } from "mqtt";
import { expect } from "vitest";
import type { Provision } from "../../src/provision/index.js";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";

/** The base cast plus what job tests need: more things, groups, and users with partial privileges. */
export function jobsProvision(extraThings: string[] = []): Provision {
  const things = ["t3", "t4", "t5", "t6", ...extraThings].map((thingName) => ({
    thingName,
    thingType: "10",
    domain: "acme",
    secret: "dev-pw-0123456789abcdef",
  }));
  return {
    ...BASE_PROVISION,
    users: [
      ...(BASE_PROVISION.users ?? []),
      {
        userName: "thingsOnly",
        password: "pw-things",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["ThingJobs.*", "Things.READ"] },
      },
      {
        userName: "groupsOnly",
        password: "pw-groups",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["ThingJobs.*", "ThingGroups.READ"] },
      },
      {
        userName: "jobReader",
        password: "pw-jobreader",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["ThingJobs.READ", "Things.READ", "ThingGroups.READ"] },
      },
      {
        userName: "creatorNoRead",
        password: "pw-noread",
        role: "ReadWrite",
        homeDomain: "acme",
        privileges: { acme: ["ThingJobs.CREATE", "Things.READ", "ThingGroups.READ"] },
      },
      { userName: "nobody", password: "pw-nobody", role: "ReadWrite", homeDomain: "acme", privileges: {} },
    ],
    things: [...(BASE_PROVISION.things ?? []), ...things],
    thingGroups: [
      { id: "g1", name: "fleet", domain: "acme", things: ["t1"] },
      { id: "g2", name: "meters", domain: "east", things: ["e1"] },
      { id: "g3", name: "spare", domain: "acme", things: ["t5", "t6"] },
    ],
  };
}

/** A clock tests move by hand. */
export class TestClock {
  constructor(public now = Date.now()) {}
  readonly fn = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

export async function startJobsDms(
  options: {
    env?: Record<string, string>;
    clock?: TestClock;
    dataDir?: string;
    provision?: Provision;
    /** Users to log in before the clock moves; all of them by default. */
    users?: string[];
  } = {},
): Promise<TestDms> {
  const provision = options.provision ?? jobsProvision();
  const t = await startTestDms({
    provision,
    env: { DMS_ROLES: "api,scheduler,mqtt", DMS_MQTT_PORT: "0", ...options.env },
    start: { clock: options.clock?.fn, jobsPollMs: 50 },
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  // Log everyone in before a test moves the clock: tokens carry the clock's iat, checked against real time.
  for (const u of options.users ?? (provision.users ?? []).map((u) => u.userName)) await t.token(u);
  return t;
}

/** The signed URL, pointed at the test server (the configured public origin has port 0). */
export function local(t: TestDms, signedUrl: string): string {
  const u = new URL(signedUrl);
  return `${t.url}${u.pathname}${u.search}`;
}

export async function uploadDocument(
  t: TestDms,
  document: unknown = { operation: "reboot" },
  domain = "acme",
  user = "alice",
): Promise<string> {
  const res = await t.call("POST", "/thing-jobs/documents", { user, body: { documentName: "doc", domain } });
  expect(res.status).toBe(200);
  const ticket = await json(res);
  const put = await fetch(local(t, ticket.signedUrl), {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(document),
  });
  expect(put.status).toBe(200);
  return ticket.documentId as string;
}

export async function createJob(t: TestDms, body: Record<string, unknown>, user = "alice"): Promise<string> {
  const jobDocumentId = body.jobDocumentId ?? (await uploadDocument(t, undefined, (body.domain as string) ?? "acme"));
  const res = await t.call("POST", "/thing-jobs/jobs", {
    user,
    body: { domain: "acme", description: "a job", targetSelection: "SNAPSHOT", jobDocumentId, ...body },
  });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.jobId as string;
}

export async function describeJob(t: TestDms, jobId: string): Promise<Payload> {
  const res = await t.call("GET", `/thing-jobs/jobs/${jobId}`, { user: "alice" });
  expect(res.status).toBe(200);
  return json(res);
}

export async function execution(t: TestDms, jobId: string, thingName: string): Promise<Payload> {
  const res = await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions/${thingName}`, { user: "alice" });
  expect(res.status).toBe(200);
  return json(res);
}

/** A device: a real mqtt.js client that records every message on its jobs topics. */
export class Device {
  readonly messages: { topic: string; payload: Payload }[] = [];
  private waiters: { topic: string; resolve: (p: Payload) => void; after: number }[] = [];

  private constructor(
    readonly thingName: string,
    readonly client: MqttClient,
  ) {
    client.on("message", (topic, buf) => {
      const payload = parseOrRaw(buf);
      this.messages.push({ topic, payload });
      const index = this.messages.length - 1;
      this.waiters = this.waiters.filter((w) => {
        if (w.topic !== topic || index < w.after) return true;
        w.resolve(payload);
        return false;
      });
    });
  }

  static async connect(
    url: string,
    thingName: string,
    password = "dev-pw-0123456789abcdef",
    subscribe = true,
  ): Promise<Device> {
    const client = await mqtt.connectAsync(url, {
      clientId: thingName,
      username: thingName,
      password,
      reconnectPeriod: 0,
      connectTimeout: 5000,
    });
    const device = new Device(thingName, client);
    if (subscribe) await client.subscribeAsync(`things/${thingName}/jobs/#`, { qos: 1 });
    return device;
  }

  /** The next message on `things/{me}/jobs/{suffix}` published from now on. */
  next(suffix: string, timeoutMs = 5000): Promise<Payload> {
    const topic = `things/${this.thingName}/jobs/${suffix}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no message on ${topic}`)), timeoutMs);
      this.waiters.push({
        topic,
        after: this.messages.length,
        resolve: (p) => {
          clearTimeout(timer);
          resolve(p);
        },
      });
    });
  }

  /** Latest message already received on a suffix, or waits for one. */
  async latest(suffix: string): Promise<Payload> {
    const topic = `things/${this.thingName}/jobs/${suffix}`;
    const seen = [...this.messages].reverse().find((m) => m.topic === topic);
    return seen ? seen.payload : this.next(suffix);
  }

  /** Publishes a request and answers `{ok, payload}` from its accepted or rejected reply. */
  async request(suffix: string, body: Record<string, unknown> = {}): Promise<{ ok: boolean; payload: Payload }> {
    const clientToken = `${suffix}-${Math.random().toString(36).slice(2)}`;
    const accepted = this.next(`${suffix}/accepted`);
    const rejected = this.next(`${suffix}/rejected`);
    accepted.catch(() => undefined);
    rejected.catch(() => undefined);
    await this.client.publishAsync(
      `things/${this.thingName}/jobs/${suffix}`,
      JSON.stringify({ ...body, clientToken }),
      {
        qos: 1,
      },
    );
    const result = await Promise.race([
      accepted.then((payload) => ({ ok: true, payload })),
      rejected.then((payload) => ({ ok: false, payload })),
    ]);
    expect(result.payload.clientToken).toBe(clientToken);
    return result;
  }

  close(): Promise<void> {
    return this.client.endAsync(true);
  }
}

export function mqttUrl(t: TestDms): string {
  return `mqtt://127.0.0.1:${t.dms.services.deviceBridge!.port}`;
}

export { until } from "../support/wait.js";

/** A device also hears its own requests on `jobs/#`, some of them deliberately not JSON. */
function parseOrRaw(buf: Buffer): Payload {
  if (buf.length === 0) return {};
  try {
    return JSON.parse(buf.toString());
  } catch {
    return buf.toString();
  }
}
