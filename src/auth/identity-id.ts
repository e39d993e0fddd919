import { createHash } from "node:crypto";

/** RFC 4122 namespace of dms identity ids (a fixed random UUID, so ids never change between releases). */
const NAMESPACE = Buffer.from("6f1c2a0e8b3d4c5f9a7e2d1b0c3f4e5a", "hex");

/**
 * The `credentials.identityId` of a user, in the `<prefix>:<uuid>` shape of the
 * Cognito identity ids that MIC clients keep and send back as the `identityId`
 * header. It is a name-based UUID (version 5) of the user name under the stack,
 * so it is the same at every login and refresh and in every process, with
 * nothing stored. It identifies, it does not authenticate: the token does that.
 */
export function identityIdOf(stackName: string, userName: string): string {
  const hash = createHash("sha1").update(NAMESPACE).update(`${stackName}/${userName}`, "utf8").digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return `${stackName}:${uuid}`;
}
