import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDms } from "../support/dms.js";
import { createJob, describeJob, Device, execution, jobsProvision, startJobsDms, until } from "./support.js";

const MOSQUITTO = { host: "127.0.0.1", port: 1883 };

function listening(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(MOSQUITTO, () => {
      socket.end();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

const available = await listening();
if (!available) console.warn("Skipping the Mosquitto device flow: nothing listens on 127.0.0.1:1883");

// Thing names unique to this run: the machine's broker is shared.
const run = Math.random().toString(36).slice(2, 8);
const thing = `mq-${run}-1`;

describe.skipIf(!available)("the device flow through an external broker (Mosquitto on 127.0.0.1:1883)", () => {
  let t: TestDms;
  let device: Device;
  beforeAll(async () => {
    t = await startJobsDms({
      provision: jobsProvision([thing]),
      env: { MQTT_URL: `mqtt://${MOSQUITTO.host}:${MOSQUITTO.port}` },
      users: ["alice"],
    });
    device = await Device.connect(`mqtt://${MOSQUITTO.host}:${MOSQUITTO.port}`, thing);
  });
  afterAll(async () => {
    await device?.close();
    await t?.close();
  });

  it("notifies, starts, rejects a stale expectedVersion and records SUCCEEDED with statusDetails", async () => {
    const notified = device.next("notify-next");
    const jobId = await createJob(t, { targets: { things: [thing] } });
    expect((await notified).execution).toMatchObject({ jobId, status: "QUEUED" });

    const started = await device.request("start-next");
    expect(started.payload.execution).toMatchObject({ jobId, status: "IN_PROGRESS", versionNumber: 2 });
    const stale = await device.request(`${jobId}/update`, { status: "SUCCEEDED", expectedVersion: 1 });
    expect(stale).toMatchObject({ ok: false, payload: { code: "VersionMismatch" } });
    const done = await device.request(`${jobId}/update`, {
      status: "SUCCEEDED",
      expectedVersion: 2,
      statusDetails: { firmware: "2.1" },
    });
    expect(done.ok).toBe(true);
    expect(await execution(t, jobId, thing)).toMatchObject({ status: "SUCCEEDED", statusDetails: { firmware: "2.1" } });
    expect((await describeJob(t, jobId)).status).toBe("COMPLETED");
  });

  it("hands device observations to the observation hook", async () => {
    const seen: string[] = [];
    t.dms.services.deviceBridge!.onObservations(async (name, payload) => {
      if (name === thing) seen.push(payload.toString());
    });
    await device.client.publishAsync(`things/${thing}/observations`, '{"state":{"temp":3}}', { qos: 1 });
    await until(() => seen.length > 0);
    expect(seen).toEqual(['{"state":{"temp":3}}']);
  });
});
