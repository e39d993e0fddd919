import { lookup, type LookupAddress, type LookupOptions } from "node:dns";
import { lookup as lookupAsync } from "node:dns/promises";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";

/**
 * Why an address is not a public unicast address, or undefined when it is.
 * Classification is ipaddr.js' `range()`; an IPv6 address that carries an
 * IPv4 address (IPv4-mapped, IPv4-compatible `::a.b.c.d`, SIIT
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo) is
 * judged by the IPv4 address it reaches. The host's own interface addresses
 * are refused too, whatever their range: a webhook must not call back into
 * this service. Anything that is not an address (a name) answers undefined.
 */
export function addressProblem(address: string, own: readonly string[] = hostAddresses()): string | undefined {
  const text = address.replace(/^\[|\]$/g, "");
  // Node's test of what is an address (URL hosts come normalised, `http://2130706433/` as 127.0.0.1);
  // ipaddr.js alone would also read a name such as `cafe` as a number.
  if (isIP(text) === 0) return undefined;
  const parsed = ipaddr.parse(text);
  const problem = parsed.kind() === "ipv4" ? ipv4Problem(parsed as ipaddr.IPv4) : ipv6Problem(parsed as ipaddr.IPv6);
  if (problem) return problem;
  const normal = parsed.toNormalizedString();
  return own.some((o) => isIP(o) !== 0 && ipaddr.parse(o).toNormalizedString() === normal)
    ? "an address of this host"
    : undefined;
}

/** True for any address that is not public unicast (see addressProblem). */
export function isPrivateAddress(address: string): boolean {
  return addressProblem(address) !== undefined;
}

function ipv4Problem(a: ipaddr.IPv4): string | undefined {
  const range = a.range();
  // `reserved` holds 198.18/15 (benchmarking), the documentation nets and 240/4; as112 and amt are
  // special-purpose anycast: none is a target a fleet's webhook has.
  return range === "unicast" ? undefined : `${range} (${a.toString()})`;
}

function ipv6Problem(a: ipaddr.IPv6): string | undefined {
  const range = a.range();
  const parts = a.parts;
  const embedded = (hi: number, lo: number): ipaddr.IPv4 => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const via = (v4: ipaddr.IPv4, form: string): string | undefined => {
    const p = ipv4Problem(v4);
    return p && `${p} via ${form} ${a.toString()}`;
  };
  switch (range) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d
      return via(embedded(parts[6]!, parts[7]!), range);
    case "rfc6052": {
      // 64:ff9b::/96 carries the address in its last 32 bits; 64:ff9b:1::/48 is a network's own
      // (local-use) translator prefix, which reaches that network's inside: refused as a whole.
      if (parts[2] !== 0) return `local-use NAT64 (${a.toString()})`;
      return via(embedded(parts[6]!, parts[7]!), "NAT64");
    }
    case "6to4": // 2002:aabb:ccdd::/48
      return via(embedded(parts[1]!, parts[2]!), "6to4");
    case "teredo": {
      // 2001:0:<server>:<flags>:<port>:<client, inverted>: both ends must be public.
      const server = embedded(parts[2]!, parts[3]!);
      const client = embedded(parts[6]! ^ 0xffff, parts[7]! ^ 0xffff);
      return via(server, "Teredo") ?? via(client, "Teredo");
    }
    case "unicast": {
      // ::a.b.c.d (IPv4-compatible, deprecated) is `unicast` to ipaddr.js; :: and ::1 have ranges of their own.
      if (parts.slice(0, 6).every((p) => p === 0)) return via(embedded(parts[6]!, parts[7]!), "IPv4-compatible");
      return undefined;
    }
    default:
      return `${range} (${a.toString()})`;
  }
}

/** The addresses of this host's interfaces (without zone), read each time: interfaces come and go. */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.replace(/%.*$/, "")));
}

/**
 * The one spelling of a host name that is classified and looked up: an IP
 * address without brackets, or a name as the WHATWG URL host parser writes it
 * (percent-decoded, IDNA to ASCII, lower case, IPv4 numbers in dotted form)
 * without its trailing dots. `localhost.`, `LOCALHOST`, `%6cocalhost` and
 * `ｌｏｃａｌｈｏｓｔ` are all `localhost`; "" when it is no host name at all.
 */
export function normalHost(hostname: string): string {
  const bare = hostname.replace(/^\[|\]$/g, "");
  if (isIP(bare) !== 0) return bare;
  const ascii = domainToASCII(bare).replace(/\.+$/, "");
  // Parsed again without the dots: `127.1.` and `0x7f000001..` are addresses too.
  return ascii === "" ? "" : domainToASCII(ascii);
}

/** Why a host cannot be a webhook target without a lookup (an address or a localhost name), or undefined. */
export function hostProblem(hostname: string): string | undefined {
  const host = normalHost(hostname);
  if (host === "") return "not a host name";
  if (host === "localhost" || host.endsWith(".localhost")) return "localhost";
  return addressProblem(host);
}

/** True for a host refused without a DNS lookup: a non-public literal address or a localhost name. */
export function isPrivateHost(hostname: string): boolean {
  return hostProblem(hostname) !== undefined;
}

export class PrivateTargetError extends Error {
  readonly code = "EPRIVATETARGET";
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The DNS lookup of every webhook connection (got's `dnsLookup`, which the
 * socket uses to connect): it refuses what hostProblem refuses, resolves the
 * name in its normal spelling, refuses when any answer is not public, and
 * hands the socket exactly the answers it checked. So the address connected
 * to is the address checked, and DNS cannot change between the two
 * (rebinding).
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  const refused = hostProblem(hostname);
  if (refused) return callback(new PrivateTargetError(`${hostname} is not a public address: ${refused}`), []);
  lookup(normalHost(hostname), { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const a of addresses) {
      const problem = addressProblem(a.address);
      if (problem)
        return callback(
          new PrivateTargetError(`${hostname} resolves to ${a.address}, not a public address: ${problem}`),
          [],
        );
    }
    if (addresses.length === 0) return callback(new PrivateTargetError(`${hostname} has no address`), []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}

/** How long a rule CREATE waits for DNS before leaving the check to delivery. */
const CREATE_LOOKUP_MS = 2_000;

/**
 * Why a name's current DNS answers are not public, or undefined (also when it
 * does not resolve in time: delivery resolves and checks again).
 */
export async function resolvedProblem(hostname: string): Promise<string | undefined> {
  const host = normalHost(hostname);
  if (host === "" || isIP(host) !== 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), CREATE_LOOKUP_MS);
  });
  try {
    const addresses = await Promise.race([lookupAsync(host, { all: true }).catch(() => undefined), timeout]);
    for (const a of addresses ?? []) {
      const problem = addressProblem(a.address);
      if (problem) return `${host} resolves to ${a.address}, not a public address: ${problem}`;
    }
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
