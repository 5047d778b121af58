/**
 * MCP 2026-07-28 routing headers (SEP-2243 standard request headers): `Mcp-Method` and `Mcp-Name` must say what the
 * body says. Checked by the proxy (proxy/message.ts) and by the gateways of managed servers (modern.ts), one rule.
 */

/** A JSON-RPC message as far as the routing headers concern it. */
type Named = { method?: unknown; params?: unknown };

/** The tool, prompt or resource a method names; the one `Mcp-Name` must repeat (MCP 2026-07-28 routing headers). */
export function namedBy(message: Named): string | undefined {
  const params = message.params as { name?: unknown; uri?: unknown } | undefined;
  if (typeof params !== "object" || params === null) return undefined;
  const named =
    message.method === "resources/read"
      ? params.uri
      : message.method === "tools/call" || message.method === "prompts/get"
        ? params.name
        : undefined;
  return typeof named === "string" ? named : undefined;
}

const NAMING_METHODS = new Set(["tools/call", "prompts/get", "resources/read"]);

/**
 * An `Mcp-Name` value as the client meant it: a value that is not plain visible ASCII travels as
 * `=?base64?<UTF-8 as base64>?=` (MCP 2026-07-28, SEP-2243 value encoding); undefined if that does not decode.
 */
function headerValue(value: string): string | undefined {
  if (!(value.startsWith("=?base64?") && value.endsWith("?=") && value.length >= 11)) return value;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(value.slice(9, -2), "base64"));
  } catch {
    return undefined;
  }
}

/**
 * Why a message's `Mcp-Method` and `Mcp-Name` headers disagree with its body, or undefined when they agree or are absent
 * (MCP 2026-07-28 transports, SEP-2243 standard request headers: a gateway routing by header and a server reading the
 * body must not see two different calls). `Mcp-Name` is compared after its `=?base64?…?=` decoding.
 */
export function routingHeaderMismatch(message: Named, headers: Headers): string | undefined {
  const methodHeader = headers.get("mcp-method");
  const nameHeader = headers.get("mcp-name");
  if (methodHeader !== null && methodHeader !== message.method)
    return `Mcp-Method says ${methodHeader}, the body ${String(message.method)}`;
  if (nameHeader !== null && NAMING_METHODS.has(message.method as string) && headerValue(nameHeader) !== namedBy(message))
    return `Mcp-Name says ${nameHeader}, the body ${namedBy(message) ?? "names nothing"}`;
  return undefined;
}
