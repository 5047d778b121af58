/**
 * What tells a 2026-07-28 request from a 2025 one, without loading the MCP SDK's v2 packages: the service loads this at
 * start-up (the proxy and the local gateways), and `@modelcontextprotocol/server` costs some 70 ms to import there
 * (measured under Bun), so modern.ts — which uses it — is loaded only once a request may be modern.
 */

/** The 2026-07-28 revision: the one modern version the gateways serve (the SDK ships no public constant for it). */
export const MODERN_PROTOCOL_VERSION = "2026-07-28";

/**
 * The SDK's `PROTOCOL_VERSION_META_KEY` (the per-request envelope's claim, MCP 2026-07-28 schema
 * `RequestMetaEnvelope`), repeated here for the reason above; a test holds it equal to the SDK's.
 */
export const PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion";

/** SEP-2243 `HeaderMismatch` (MCP 2026-07-28): a routing header disagrees with the body, HTTP 400. The SDK exports no constant for it. */
export const HEADER_MISMATCH = -32020;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** True when a message's `_meta` carries the protocol-version key: the one signal of a 2026-07-28 request. */
export const claimsEnvelope = (message: unknown): boolean =>
  isObject(message) &&
  isObject(message.params) &&
  isObject(message.params._meta) &&
  PROTOCOL_VERSION_META_KEY in message.params._meta;

/** True when a POST may be 2026-07-28: a message claims the envelope, or the header names 2026-07-28 or later. */
export function mayBeModern(parsed: unknown, headers: Headers): boolean {
  const version = headers.get("mcp-protocol-version")?.trim();
  if (version !== undefined && version >= MODERN_PROTOCOL_VERSION) return true;
  return (Array.isArray(parsed) ? parsed : [parsed]).some(claimsEnvelope);
}

/**
 * What a managed stdio connector's gateway speaks, recorded on the connector at connect: 2026-07-28 (modern.ts) and the
 * 2025 session era its clients' `initialize` agrees (the SDK's latest; the gateway relays older ones as they come).
 */
export const MANAGED_PROTOCOL_VERSIONS = [MODERN_PROTOCOL_VERSION, "2025-11-25"];

/** True for a 2026-07-28 POST: SEP-2243 — such a request always names its revision in `MCP-Protocol-Version`. */
export function isModernPost(request: Request): boolean {
  if (request.method !== "POST") return false;
  const version = request.headers.get("mcp-protocol-version");
  return version !== null && version >= MODERN_PROTOCOL_VERSION;
}
