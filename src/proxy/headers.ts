import { HOP_BY_HOP_HEADERS } from "../http/hop-by-hop";

/**
 * Which headers cross the proxy (DESIGN.md "MCP proxy"). Requests: only the MCP transport headers
 * of the client, then the connector's stored credentials; never the client's Authorization or cookies.
 */
const FORWARDED_REQUEST_HEADERS = [
  "accept",
  "content-type",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  // MCP 2026-07-28 routing headers.
  "mcp-method",
  "mcp-name",
  // Passed so the upstream's compression reaches the client untouched (fetch runs with decompress: false).
  "accept-encoding",
] as const;

/**
 * Response headers that are not passed back: hop-by-hop and framing, which the service's own connection
 * sets; cookies, since the service's origin is not the upstream's.
 */
const DROPPED_RESPONSE_HEADERS = new Set([...HOP_BY_HOP_HEADERS, "content-length", "set-cookie", "date", "server", "alt-svc"]);

export function upstreamRequestHeaders(client: Headers, stored: Record<string, string>): Headers {
  const out = new Headers();
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = client.get(name);
    if (value !== null) out.set(name, value);
  }
  for (const name in stored) out.set(name, stored[name]!);
  return out;
}

export function clientResponseHeaders(upstream: Headers): Headers {
  const out = new Headers();
  // RFC 9110 §7.6.1: headers named in Connection are hop-by-hop too.
  const named = new Set((upstream.get("connection") ?? "").toLowerCase().split(",").map((s) => s.trim()));
  upstream.forEach((value, name) => {
    if (!DROPPED_RESPONSE_HEADERS.has(name) && !named.has(name)) out.append(name, value);
  });
  return out;
}
