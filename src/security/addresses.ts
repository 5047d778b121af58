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
ALWAYS.addSubnet("64:ff9b::a9fe:0", 112, "ipv6"); // RFC 6052 NAT64 form of 169.254.0.0/16

const PRIVATE = new BlockList();
PRIVATE.addSubnet("127.0.0.0", 8, "ipv4"); // loopback
PRIVATE.addSubnet("10.0.0.0", 8, "ipv4"); // RFC 1918
PRIVATE.addSubnet("172.16.0.0", 12, "ipv4"); // RFC 1918
PRIVATE.addSubnet("192.168.0.0", 16, "ipv4"); // RFC 1918
PRIVATE.addSubnet("100.64.0.0", 10, "ipv4"); // RFC 6598 shared address space
PRIVATE.addSubnet("198.18.0.0", 15, "ipv4"); // RFC 2544 benchmarking
PRIVATE.addAddress("::1", "ipv6"); // loopback
PRIVATE.addSubnet("fc00::", 7, "ipv6"); // RFC 4193 unique local

/** Host names that are metadata services whatever they resolve to. */
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"]);

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/** The IPv4 address inside an IPv4-mapped or -compatible IPv6 address ([RFC 4291 §2.5.5](https://www.rfc-editor.org/rfc/rfc4291#section-2.5.5)), if any. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^(?:0{0,4}:){0,5}(?:ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address.replace(/^::/, ""));
  if (match) return match[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export function checkAddress(address: string, blockPrivate: boolean): AddressVerdict {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const v4 = isIP(bare) === 6 ? embeddedIpv4(bare) : undefined;
  const [ip, family] = v4 ? [v4, "ipv4" as const] : [bare, isIP(bare) === 4 ? ("ipv4" as const) : ("ipv6" as const)];
  if (isIP(ip) === 0) return { allowed: false, reason: `"${address}" is not an IP address` };
  if (ALWAYS.check(ip, family)) return { allowed: false, reason: `${address} is a link-local, metadata or reserved address` };
  if (blockPrivate && PRIVATE.check(ip, family)) {
    return { allowed: false, reason: `${address} is a loopback or private address (SECURITY__BLOCK_PRIVATE_NETWORKS=true)` };
  }
  return { allowed: true };
}

export function checkHostName(host: string): AddressVerdict {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (METADATA_HOSTS.has(name)) return { allowed: false, reason: `${host} is a cloud metadata host` };
  return { allowed: true };
}
