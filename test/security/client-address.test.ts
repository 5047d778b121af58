import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config/load";
import { clientAddress, parseTrustedProxies } from "../../src/security/client-address";

// Who the client is (security/client-address.ts): the TCP peer, or what a trusted proxy (SERVER__TRUSTED_PROXIES) says
// in X-Forwarded-For or Forwarded, read from the right so that what a client writes itself never counts.
const trusted = parseTrustedProxies(["127.0.0.1/32", "10.0.0.0/8", "fd00::/8"]);
const none = parseTrustedProxies([]);
const from = (peer: string | undefined, headers: Record<string, string>, list = trusted) =>
  clientAddress(peer, new Headers(headers), list);

describe("a peer that is not trusted", () => {
  test("its forwarding headers are ignored: the client is the peer", () => {
    expect(from("203.0.113.9", { "x-forwarded-for": "198.51.100.1" })).toBe("203.0.113.9");
    expect(from("203.0.113.9", { forwarded: "for=198.51.100.1" })).toBe("203.0.113.9");
    expect(from("127.0.0.1", { "x-forwarded-for": "198.51.100.1" }, none)).toBe("127.0.0.1");
    expect(from(undefined, { "x-forwarded-for": "198.51.100.1" })).toBeUndefined();
  });
});

describe("a trusted proxy", () => {
  test("X-Forwarded-For: the rightmost address that is not a trusted proxy; what the client prepended is never reached", () => {
    expect(from("127.0.0.1", { "x-forwarded-for": "198.51.100.1" })).toBe("198.51.100.1");
    expect(from("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 198.51.100.1" })).toBe("198.51.100.1");
    expect(from("10.0.0.1", { "x-forwarded-for": "6.6.6.6,198.51.100.1 , 10.1.2.3" })).toBe("198.51.100.1");
    // A header of trusted hops only: the farthest of them.
    expect(from("10.0.0.1", { "x-forwarded-for": "10.9.9.9, 10.1.2.3" })).toBe("10.9.9.9");
    expect(from("127.0.0.1", { "x-forwarded-for": "198.51.100.1:5123" })).toBe("198.51.100.1");
    expect(from("127.0.0.1", { "x-forwarded-for": "[2001:DB8::1]:443" })).toBe("2001:db8::1");
    expect(from("127.0.0.1", { "x-forwarded-for": "2001:db8::1" })).toBe("2001:db8::1");
  });

  test("Forwarded (RFC 7239): for= of each element, quoted or not, IPv6 in brackets with or without a port", () => {
    expect(from("127.0.0.1", { forwarded: "for=192.0.2.60;proto=http;by=203.0.113.43" })).toBe("192.0.2.60");
    expect(from("127.0.0.1", { forwarded: 'For="[2001:db8:cafe::17]:4711"' })).toBe("2001:db8:cafe::17");
    expect(from("127.0.0.1", { forwarded: 'for=6.6.6.6, for="192.0.2.43:47011";proto=https' })).toBe("192.0.2.43");
    expect(from("10.0.0.1", { forwarded: 'for=192.0.2.60;by="a,b;c", for=10.1.1.1' })).toBe("192.0.2.60");
  });

  test("both headers: they must name the same client, else a client wrote the one its proxy does not set, and the peer is the client", () => {
    expect(from("127.0.0.1", { forwarded: "for=198.51.100.1", "x-forwarded-for": "198.51.100.1" })).toBe("198.51.100.1");
    // nginx set X-Forwarded-For and passed on the Forwarded the client made up.
    expect(from("127.0.0.1", { forwarded: "for=6.6.6.6", "x-forwarded-for": "198.51.100.1" })).toBe("127.0.0.1");
  });

  test("an entry that cannot be read before the client's is found: the peer; junk to the left of it is never read", () => {
    for (const headers of <Record<string, string>[]>[
      { "x-forwarded-for": "not-an-address" },
      { "x-forwarded-for": "198.51.100.1, unknown" },
      { "x-forwarded-for": "" },
      { "x-forwarded-for": "198.51.100.1," },
      { forwarded: "for=unknown" },
      { forwarded: "for=_hidden" },
      { forwarded: 'for="198.51.100.1' },
      { forwarded: "proto=https" },
      { forwarded: "for=1.1.1.1;for=2.2.2.2" },
      { forwarded: "=1.1.1.1" },
    ]) {
      expect(from("127.0.0.1", headers), JSON.stringify(headers)).toBe("127.0.0.1");
    }
    expect(from("127.0.0.1", { "x-forwarded-for": "junk, 198.51.100.1" })).toBe("198.51.100.1");
    expect(from("127.0.0.1", { forwarded: "for=unknown, for=198.51.100.1" })).toBe("198.51.100.1");
  });

  test("a dual-stack listener's IPv4-mapped peer is the IPv4 address it maps; IPv6 ranges match", () => {
    expect(from("::ffff:127.0.0.1", { "x-forwarded-for": "198.51.100.1" })).toBe("198.51.100.1");
    expect(from("::ffff:203.0.113.9", {})).toBe("203.0.113.9");
    expect(from("fd12::1", { "x-forwarded-for": "198.51.100.1" })).toBe("198.51.100.1");
    expect(from("127.0.0.1", {})).toBe("127.0.0.1");
  });
});

describe("SERVER__TRUSTED_PROXIES", () => {
  test("takes IPv4 and IPv6 CIDRs and single addresses; anything else stops the start naming the setting and the entry", () => {
    const config = loadConfig({ SERVER__TRUSTED_PROXIES: "10.0.0.0/8, 192.168.1.1,::1/128" });
    expect(config.server.trustedProxies.has("10.200.0.1")).toBe(true);
    expect(config.server.trustedProxies.has("192.168.1.1")).toBe(true);
    expect(config.server.trustedProxies.has("192.168.1.2")).toBe(false);
    expect(config.server.trustedProxies.has("::1")).toBe(true);
    expect(loadConfig({}).server.trustedProxies.empty).toBe(true);
    for (const bad of ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/8/8", "example.com", "10.0.0.0/x"]) {
      expect(() => loadConfig({ SERVER__TRUSTED_PROXIES: bad }), bad).toThrow(
        `SERVER__TRUSTED_PROXIES: "${bad}" is not an IPv4 or IPv6 address`,
      );
    }
  });
});
