import { BlockList, isIP } from "node:net";

/** Client addresses a session accepts; `undefined` means any address. */
export type Whitelist = BlockList | undefined;

const MAPPED_V4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/**
 * An IPv4 peer of a dual-stack listener shows up as `::ffff:a.b.c.d`; folding
 * that form to plain IPv4 on both sides lets `127.0.0.1` and
 * `::ffff:127.0.0.1` name the same client.
 */
export function normalizeAddress(address: string): { address: string; family: "ipv4" | "ipv6" } | undefined {
  const unbracketed = address.replace(/^\[(.*)\]$/, "$1");
  const mapped = MAPPED_V4.exec(unbracketed);
  const plain = mapped ? mapped[1]! : unbracketed;
  const version = isIP(plain);
  if (version === 0) return undefined;
  return { address: plain, family: version === 4 ? "ipv4" : "ipv6" };
}

/**
 * Parses the `ip_whitelist` query value: comma-separated addresses, each IPv4,
 * IPv6 or IPv4-mapped IPv6; a `/prefix` (CIDR) is accepted as well. Returns the
 * first entry that is not an address as `bad`.
 */
export function parseWhitelist(value: string): { list: BlockList } | { bad: string } {
  const list = new BlockList();
  const entries = value
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  if (entries.length === 0) return { bad: value };
  for (const entry of entries) {
    const [addr, prefix, extra] = entry.split("/");
    const ip = normalizeAddress(addr!);
    if (!ip || extra !== undefined) return { bad: entry };
    if (prefix === undefined) {
      list.addAddress(ip.address, ip.family);
      continue;
    }
    const bits = Number(prefix);
    if (!/^\d+$/.test(prefix) || bits > (ip.family === "ipv4" ? 32 : 128)) return { bad: entry };
    list.addSubnet(ip.address, bits, ip.family);
  }
  return { list };
}

/** Whether a peer at `remoteAddress` may connect. */
export function admits(whitelist: Whitelist, remoteAddress: string | undefined): boolean {
  if (!whitelist) return true;
  const ip = remoteAddress === undefined ? undefined : normalizeAddress(remoteAddress);
  return ip !== undefined && whitelist.check(ip.address, ip.family);
}
