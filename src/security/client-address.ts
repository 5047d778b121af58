import { BlockList, isIP } from "node:net";
import { ipv6Groups } from "./addresses";

/** The peers whose forwarding headers are believed (SERVER__TRUSTED_PROXIES). */
export type TrustedProxies = { has(address: string): boolean; readonly empty: boolean };

/**
 * Parses SERVER__TRUSTED_PROXIES: CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses. Throws an Error that names
 * the entry it cannot read.
 */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const entry of entries) {
    const slash = entry.indexOf("/");
    const address = slash < 0 ? entry : entry.slice(0, slash);
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = slash < 0 ? max : /^\d{1,3}$/.test(entry.slice(slash + 1)) ? Number(entry.slice(slash + 1)) : -1;
    if (family === 0 || prefix < 0 || prefix > max)
      throw new Error(`"${entry}" is not an IPv4 or IPv6 address with an optional /prefix length`);
    list.addSubnet(address, prefix, family === 4 ? "ipv4" : "ipv6");
  }
  return {
    empty: entries.length === 0,
    has: (address) => {
      const family = isIP(address);
      return family !== 0 && list.check(address, family === 4 ? "ipv4" : "ipv6");
    },
  };
}

/**
 * One spelling per address: lower case, no zone, and an IPv4-mapped IPv6 address (a dual-stack listener's view of
 * an IPv4 peer, [RFC 4291 §2.5.5.2](https://www.rfc-editor.org/rfc/rfc4291#section-2.5.5.2)) as the IPv4 address it is. Undefined for anything that is not an IP address.
 */
export function normalizeAddress(address: string): string | undefined {
  const bare = address.toLowerCase().replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 4) return bare;
  if (family !== 6) return undefined;
  const g = ipv6Groups(bare);
  if (g && g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff)
    return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  return bare;
}

/**
 * The address of the client a request came from. The TCP peer, unless the peer is a trusted proxy: then the
 * forwarding header names it — `Forwarded` ([RFC 7239 §5.2](https://www.rfc-editor.org/rfc/rfc7239#section-5.2) `for=`) or `X-Forwarded-For` — read from the right
 * (the entry the nearest proxy appended) past every trusted proxy, so addresses a client wrote in front itself
 * are never reached. Headers from a peer that is not trusted are ignored.
 *
 * A proxy appends to the header it sets and passes any other through as the client wrote it; so when both headers
 * are present they must name the same client, else the peer is the client (as for a header that cannot be read
 * before the client's entry is found). A request that ends up under the proxy's address shares its failure brake
 * only with other such requests: it gains nobody else's address.
 */
export function clientAddress(peer: string | undefined, headers: Headers, trusted: TrustedProxies): string | undefined {
  const from = peer === undefined ? undefined : normalizeAddress(peer);
  if (from === undefined || trusted.empty || !trusted.has(from)) return from ?? peer;
  const forwarded = headers.get("forwarded");
  const forwardedFor = headers.get("x-forwarded-for");
  const byForwarded = forwarded === null ? undefined : walk(forwardedNodes(forwarded), trusted);
  const byForwardedFor = forwardedFor === null ? undefined : walk(forwardedFor.split(","), trusted);
  if (byForwarded === null || byForwardedFor === null) return from;
  if (byForwarded !== undefined && byForwardedFor !== undefined && byForwarded !== byForwardedFor) return from;
  return byForwarded ?? byForwardedFor ?? from;
}

/** From the right: the first address that is not a trusted proxy; the leftmost when all are; null when an entry reached is unreadable. */
function walk(entries: string[] | null, trusted: TrustedProxies): string | null {
  if (entries === null || entries.length === 0) return null;
  let address: string | undefined;
  for (let i = entries.length - 1; i >= 0; i--) {
    address = nodeAddress(entries[i]!.trim());
    if (address === undefined) return null;
    if (!trusted.has(address)) return address;
  }
  return address!;
}

/**
 * A node as forwarding headers write it: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]:4711`
 * ([RFC 7239 §6](https://www.rfc-editor.org/rfc/rfc7239#section-6)). `unknown` and obfuscated identifiers (`_hidden`) name no address: undefined.
 */
function nodeAddress(node: string): string | undefined {
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(node);
  if (bracketed) return isIP(bracketed[1]!) === 6 ? normalizeAddress(bracketed[1]!) : undefined;
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(node);
  return normalizeAddress(withPort ? withPort[1]! : node);
}

/**
 * The `for=` node of each element of a Forwarded header ([RFC 7239 §4](https://www.rfc-editor.org/rfc/rfc7239#section-4): elements split by commas, pairs by
 * semicolons, values tokens or quoted strings), in order. Null when it cannot be read; an element without `for`
 * gives an empty node (unreadable, should the walk reach it).
 */
function forwardedNodes(header: string): string[] | null {
  const nodes: string[] = [];
  let element: Record<string, string> = {};
  let name = "";
  let value = "";
  let inName = true;
  let quoted = false;
  const endPair = (): boolean => {
    const key = name.trim().toLowerCase();
    if (key === "" && value === "" && inName) return true;
    if (inName || key === "" || key in element) return false;
    element[key] = value.trim();
    name = "";
    value = "";
    inName = true;
    return true;
  };
  for (let i = 0; i < header.length; i++) {
    const c = header[i]!;
    if (quoted) {
      if (c === "\\" && i + 1 < header.length) value += header[++i];
      else if (c === '"') quoted = false;
      else value += c;
    } else if (c === '"' && !inName) quoted = true;
    else if (c === "=" && inName) inName = false;
    else if (c === ";" || c === ",") {
      if (!endPair()) return null;
      if (c === ",") {
        nodes.push(element.for ?? "");
        element = {};
      }
    } else if (inName) name += c;
    else value += c;
  }
  if (quoted || !endPair()) return null;
  nodes.push(element.for ?? "");
  return nodes;
}
