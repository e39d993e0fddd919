import mqtt from "mqtt";
import type { TestDms } from "./dms.js";

/** Connects to dms's embedded broker as a device: "connected", or the reason the broker gave for refusing. */
export async function connectAs(t: TestDms, thingName: string, password: string): Promise<string> {
  const url = `mqtt://127.0.0.1:${t.dms.services.deviceBridge!.port}`;
  return mqtt
    .connectAsync(url, {
      clientId: thingName,
      username: thingName,
      password,
      reconnectPeriod: 0,
      connectTimeout: 60_000,
    })
    .then(
      async (client) => {
        await client.endAsync(true);
        return "connected";
      },
      (err: Error) => err.message,
    );
}
