import { createHash } from "node:crypto";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";

/** The base cast plus a user that holds no Files privilege at all. */
export const FILES_PROVISION = {
  ...BASE_PROVISION,
  users: [
    ...BASE_PROVISION.users!,
    {
      userName: "nofiles",
      password: "nofiles-pw",
      role: "ReadWrite" as const,
      homeDomain: "acme",
      privileges: { acme: ["Things.*", "ThingTypes.*"] },
    },
  ],
};

/** A dms whose clock the test moves: `advance(ms)`. */
export async function startFilesDms(): Promise<TestDms & { advance(ms: number): void }> {
  let offset = 0;
  const t = await startTestDms({ provision: FILES_PROVISION, start: { clock: () => Date.now() + offset } });
  return Object.assign(t, { advance: (ms: number) => void (offset += ms) });
}

export function md5Base64(data: string | Buffer): string {
  return createHash("md5").update(data).digest("base64");
}

export function md5Hex(data: string | Buffer): string {
  return createHash("md5").update(data).digest("hex");
}

export function query(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

/** GET /files/upload-url, expecting success. */
export async function uploadUrl(t: TestDms, params: Record<string, string>, user = "alice"): Promise<string> {
  const res = await t.call("GET", `/files/upload-url?${query(params)}`, { user });
  const body: Payload = await json(res);
  if (res.status !== 200) throw new Error(`upload-url ${res.status}: ${JSON.stringify(body)}`);
  return body.url as string;
}

export async function downloadUrl(t: TestDms, params: Record<string, string>, user = "alice"): Promise<string> {
  const res = await t.call("GET", `/files/download-url?${query(params)}`, { user });
  const body: Payload = await json(res);
  if (res.status !== 200) throw new Error(`download-url ${res.status}: ${JSON.stringify(body)}`);
  return body.url as string;
}

/** Uploads `data` through a fresh signed URL (no bound headers). */
export async function upload(
  t: TestDms,
  params: Record<string, string>,
  data: string | Buffer,
  user = "alice",
): Promise<Response> {
  const url = await uploadUrl(t, params, user);
  return fetch(url, { method: "PUT", body: data, headers: { "content-type": "application/octet-stream" } });
}
