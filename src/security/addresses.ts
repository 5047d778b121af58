import { BlockList, isIP } from "node:net";

/**
 * Address classes for the URL safety check against server-side request forgery. Link-local and cloud metadata addresses are
 * never reachable through the service; loopback and private ranges only when SECURITY__BLOCK_PRIVATE_NETWORKS
 * is false (a self-hosted VM talks to its own servers).
 */
const ALWAYS = new BlockList();
ALWAYS.addSubnet("169.254.0.0", 16, "ipv4"); // RFC 3927 link-local, cloud metadata (169.254.169.254)
ALWAYS.addSubnet("0.0.0.0", 8, "ipv4"); // RFC 791 "this network": 0.0.0.0 reaches the local host
ALWAYS.addSubnet("224.0.0.0", 4, "ipv4"); // multicast
ALWAYS.addSubnet("240.0.0.0", 4, "ipv4"); // reserved, broadcast
ALWAYS.addSubnet("fe80::", 10, "ipv6"); // RFC 4291 link-local
ALWAYS.addAddress("fd00:ec2::254", "ipv6"); // AWS metadata over IPv6
ALWAYS.addSubnet("ff00::", 8, "ipv6"); // multicast
ALWAYS.addAddress("::", "ipv6"); // unspecified

const PRIVATE = new BlockList();
PRIVATE.addSubnet("127.0.0.0", 8, "ipv4"); // loopback
PRIVATE.addSubnet("10.0.0.0", 8, "ipv4"); // RFC 1918
PRIVATE.addSubnet("172.16.0.0", 12, "ipv4"); // RFC 1918
PRIVATE.addSubnet("192.168.0.0", 16, "ipv4"); // RFC 1918
PRIVATE.addSubnet("100.64.0.0", 10, "ipv4"); // RFC 6598 shared address space
PRIVATE.addSubnet("198.18.0.0", 15, "ipv4"); // RFC 2544 benchmarking
PRIVATE.addAddress("::1", "ipv6"); // loopback
PRIVATE.addSubnet("fc00::", 7, "ipv6"); // RFC 4193 unique local

// Cloud metadata and platform endpoints outside 169.254.0.0/16.
ALWAYS.addAddress("100.100.100.200", "ipv4"); // Alibaba Cloud metadata
ALWAYS.addAddress("192.0.0.192", "ipv4"); // Oracle Cloud metadata (classic)
ALWAYS.addAddress("168.63.129.16", "ipv4"); // Azure platform endpoint (wireserver)

/** Host names that are metadata services whatever they resolve to. */
const METADATA_HOSTS = new Set([
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.com",
  "metadata.tencentyun.com",
]);

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/** An IPv6 address as its eight 16-bit groups ([RFC 4291 §2.2](https://www.rfc-editor.org/rfc/rfc4291#section-2.2), `::` and a dotted IPv4 tail included). */
export function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail, ...more] = text.split("::");
  if (more.length) return undefined;
  const parse = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

const ipv4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address carries, by every standard embedding, so that one set of IPv4 rules covers them
 * all: IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96 ([RFC 4291 §2.5.5](https://www.rfc-editor.org/rfc/rfc4291#section-2.5.5)), IPv4-translated
 * ::ffff:0:0:0/96 (RFC 2765), NAT64 64:ff9b::/96 and 64:ff9b:1::/48 ([RFC 6052 §2.1](https://www.rfc-editor.org/rfc/rfc6052#section-2.1), RFC 8215), 6to4 2002::/16
 * ([RFC 3056 §2](https://www.rfc-editor.org/rfc/rfc3056#section-2)) and Teredo 2001::/32, whose client address is stored inverted ([RFC 4380 §4](https://www.rfc-editor.org/rfc/rfc4380#section-4)).
 */
function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g) return undefined;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return ipv4Of(g[6]!, g[7]!); // mapped
  if (zero(0, 6) && (g[6] !== 0 || g[7]! > 1)) return ipv4Of(g[6]!, g[7]!); // compatible (not :: or ::1)
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return ipv4Of(g[6]!, g[7]!); // translated
  if (g[0] === 0x64 && g[1] === 0xff9b && (zero(2, 6) || g[2] === 1)) return ipv4Of(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x2002) return ipv4Of(g[1]!, g[2]!); // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return ipv4Of(g[6]! ^ 0xffff, g[7]! ^ 0xffff); // Teredo
  return undefined;
}

/**
 * The one address rule: an IPv6 address is judged by itself and, when it embeds an IPv4 address, by that address
 * too — so no embedding of a refused IPv4 address gets through.
 */
export function checkAddress(address: string, blockPrivate: boolean): AddressVerdict {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 0) return { allowed: false, reason: `"${address}" is not an IP address` };
  const candidates: [string, "ipv4" | "ipv6"][] = [[bare, family === 4 ? "ipv4" : "ipv6"]];
  const v4 = family === 6 ? embeddedIpv4(bare) : undefined;
  if (v4) candidates.push([v4, "ipv4"]);
  const shown = v4 ? `${address} (${v4})` : address;
  if (candidates.some(([ip, kind]) => ALWAYS.check(ip, kind)))
    return { allowed: false, reason: `${shown} is a link-local, metadata or reserved address` };
  if (blockPrivate && candidates.some(([ip, kind]) => PRIVATE.check(ip, kind))) {
    return { allowed: false, reason: `${shown} is a loopback or private address (SECURITY__BLOCK_PRIVATE_NETWORKS=true)` };
  }
  return { allowed: true };
}

export function checkHostName(host: string): AddressVerdict {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (METADATA_HOSTS.has(name)) return { allowed: false, reason: `${host} is a cloud metadata host` };
  return { allowed: true };
}

/**
 * What one client is, when counting what one client may hold: an IPv4 address (an IPv4-mapped IPv6 one as that
 * IPv4 address), or an IPv6 address's /64 — a single host picks addresses freely within its /64 ([RFC 4291
 * §2.5.1](https://www.rfc-editor.org/rfc/rfc4291#section-2.5.1): 64-bit interface identifiers; RFC 8981 rotates them). Anything else as given.
 */
export function addressGroup(address: string): string {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (isIP(bare) !== 6) return address;
  const g = ipv6Groups(bare)!;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return ipv4Of(g[6]!, g[7]!);
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(":")}::/64`;
}
