import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  SERVER_INFO_META_KEY,
  UnsupportedProtocolVersionError,
  type JSONRPCNotification,
  type JSONRPCRequest,
} from "@modelcontextprotocol/server";
import { createClassifier } from "./classify-memo";
import { namedBy, routingHeaderMismatch } from "./routing-headers";
import { HEADER_MISMATCH, mayBeModern, MODERN_PROTOCOL_VERSION } from "./era";

/**
 * The 2026-07-28 side of a gateway whose stdio server speaks only the 2025 era: which POSTs are 2026-07-28 requests,
 * the header checks they must pass, and the shape of what they get back. The gateways (shared.ts) relay them over the
 * one legacy session they keep with the server process.
 */

export const SUPPORTED_MODERN_VERSIONS = [MODERN_PROTOCOL_VERSION];

/**
 * The requests of MCP 2026-07-28, as the SDK's 2026-07-28 codec registers them. The rest of the 2025 vocabulary is gone —
 * `initialize` (and `notifications/initialized`), `ping`, `logging/setLevel` (SEP-2577: the level travels per request),
 * `resources/subscribe`/`unsubscribe` (replaced by `subscriptions/listen`), the task methods — and a modern request for
 * one of them is refused as the SDK's own modern server refuses it: -32601, HTTP 404. (The SDK's registry is internal.)
 */
const MODERN_METHODS = new Set([
  "tools/call",
  "tools/list",
  "prompts/get",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "completion/complete",
  "server/discover",
  "subscriptions/listen",
]);

/** MCP 2026-07-28 schema: the results that carry `ttlMs` and `cacheScope` (the `CacheableResult` extenders). */
const CACHEABLE_METHODS = new Set([
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "server/discover",
]);

/** The per-request envelope keys (MCP 2026-07-28 schema, `RequestMetaEnvelope`): the legacy session has no use for them. */
const ENVELOPE_KEYS = [PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY];

export type ModernMessage = JSONRPCRequest | JSONRPCNotification;
export type PostEra = { era: "legacy" } | { era: "modern"; message: ModernMessage } | { era: "refused"; response: Response };

const rpcError = (status: number, id: unknown, code: number, message: string, data?: unknown) =>
  Response.json(
    { jsonrpc: "2.0", id: id ?? null, error: { code, message, ...(data === undefined ? {} : { data }) } },
    { status },
  );

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The SDK's classification, its outcomes kept per request shape (classify-memo.ts). */
const classify = createClassifier();

/**
 * The era of a POST without a session, by its body (MCP 2026-07-28 Streamable HTTP, SEP-2243: body-primary; an `initialize`
 * or a request without the protocol-version `_meta` key is legacy, and no other reserved key is a signal). Legacy
 * traffic is left as it came, for the session code to serve as before. A 2026-07-28 request must pass the SEP-2243
 * header checks: `MCP-Protocol-Version` and `Mcp-Method` present and equal to the body, `Mcp-Name` (decoded) equal to
 * the tool, prompt or resource the body names → else HTTP 400, -32020; a version the gateway does not serve → 400, -32022
 * with the supported list; a method the revision removed → 404, -32601.
 */
export function classifyPost(parsed: unknown, headers: Headers): PostEra {
  if (!mayBeModern(parsed, headers)) return { era: "legacy" };
  const route = classify({
    body: parsed,
    protocolVersionHeader: headers.get("mcp-protocol-version") ?? undefined,
    mcpMethodHeader: headers.get("mcp-method") ?? undefined,
    mcpNameHeader: headers.get("mcp-name") ?? undefined,
  });
  const id = isObject(parsed) ? parsed.id : undefined;
  if (route.kind === "reject")
    return { era: "refused", response: rpcError(route.httpStatus, id, route.code, route.message, route.data) };
  if (route.kind === "legacy") return { era: "legacy" };
  const message = route.message;
  const requested = route.classification.revision;
  if (requested !== undefined && !SUPPORTED_MODERN_VERSIONS.includes(requested)) {
    const e = new UnsupportedProtocolVersionError({ supported: SUPPORTED_MODERN_VERSIONS, requested });
    return { era: "refused", response: rpcError(400, id, e.code, e.message, e.data) };
  }
  if (route.messageKind === "request") {
    // SEP-2243: every modern request names its version and method in headers, and the tool/prompt/resource too.
    const missing = !headers.has("mcp-protocol-version")
      ? "MCP-Protocol-Version"
      : !headers.has("mcp-method")
        ? "Mcp-Method"
        : namedBy(message) !== undefined && !headers.has("mcp-name")
          ? "Mcp-Name"
          : undefined;
    const why = missing ? `the required ${missing} header is absent` : routingHeaderMismatch(message, headers);
    if (why) return { era: "refused", response: rpcError(400, id, HEADER_MISMATCH, `Bad Request: ${why}`) };
    if (!MODERN_METHODS.has(message.method))
      return {
        era: "refused",
        response: rpcError(
          404,
          id,
          ProtocolErrorCode.MethodNotFound,
          `Method not found: ${message.method} is not a 2026-07-28 method`,
        ),
      };
  }
  return { era: "modern", message };
}

/** A modern request's params for the legacy session: the envelope keys removed, `progressToken` and trace context kept. */
export function legacyParams(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!params || !isObject(params._meta)) return params;
  const meta = { ...params._meta };
  for (const key of ENVELOPE_KEYS) delete meta[key];
  const { _meta: _, ...rest } = params;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

/** The server's identity as 2026-07-28 results carry it (schema `ResultMetaObject`: `io.modelcontextprotocol/serverInfo`). */
const serverInfoOf = (init: Record<string, unknown>) => init.serverInfo as Record<string, unknown> | undefined;

/**
 * A legacy result as a 2026-07-28 one (MCP 2026-07-28 schema `Result`): `resultType: "complete"` (a legacy server has no
 * other), `ttlMs: 0` and `cacheScope: "private"` on cacheable results (nothing the gateway relays may be cached for
 * others: the server may answer each user differently), and the server's identity in `_meta`.
 */
export function modernResult(method: string, result: Record<string, unknown>, init: Record<string, unknown>) {
  const meta = isObject(result._meta) ? result._meta : {};
  return {
    ...result,
    resultType: "complete",
    ...(CACHEABLE_METHODS.has(method) ? { ttlMs: 0, cacheScope: "private" } : {}),
    _meta: { ...meta, [SERVER_INFO_META_KEY]: meta[SERVER_INFO_META_KEY] ?? serverInfoOf(init) },
  };
}

/**
 * MCP 2026-07-28 `server/discover`, answered from the server's one `initialize` result. Its capabilities lose
 * `logging` (a legacy server's log lines on stdio name no request, so a 2026-07-28 client never gets one) and `tasks`
 * (the 2025-11-25 task methods are not in the revision), as the SDK's own 2026-07-28 codec drops `tasks`.
 */
export function discoverResult(init: Record<string, unknown>) {
  const { capabilities, instructions } = init as { capabilities?: Record<string, unknown>; instructions?: unknown };
  const { logging: _logging, tasks: _tasks, ...offered } = capabilities ?? {};
  return modernResult(
    "server/discover",
    {
      supportedVersions: SUPPORTED_MODERN_VERSIONS,
      capabilities: offered,
      ...(typeof instructions === "string" ? { instructions } : {}),
    },
    init,
  );
}
