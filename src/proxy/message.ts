import { claimsEnvelope, HEADER_MISMATCH } from "../gateway/era";
import { routingHeaderMismatch } from "../gateway/routing-headers";
import { MalformedJson, parseStrictRequest } from "../http/strict-json";

/**
 * The one reading of a client's JSON-RPC message that the proxy's decisions share (docs/behaviour.md "Tool policy", "Audit
 * trail"): parsed once, fail-closed (http/strict-json.ts), checked against the 2026-07-28 routing headers, and sent on as
 * the value that was checked.
 */

export type RpcMessage = {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
};

export type ReadMessage = { ok: true; message: RpcMessage | RpcMessage[] } | { ok: false; response: Response };

/** The proxy's own JSON-RPC answer; its length declared, so the audit trail reads it whole at once. */
export function rpcError(id: unknown, code: number, message: string, status = 200): Response {
  const body = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, error: { code, message } }));
  return new Response(body, {
    status,
    headers: { "content-type": "application/json", "content-length": String(body.byteLength) },
  });
}

/** The proxy's own JSON-RPC result (a tool's answer it gives in the server's place), its length declared like `rpcError`'s. */
export function rpcResult(id: unknown, result: unknown): Response {
  const body = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, result }));
  return new Response(body, {
    status: 200,
    headers: { "content-type": "application/json", "content-length": String(body.byteLength) },
  });
}

/** [JSON-RPC 2.0 §4](https://www.jsonrpc.org/specification#request_object): a request object's members, as far as the proxy reads them. */
function invalid(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return "a JSON-RPC message is an object";
  const m = message as RpcMessage;
  if (m.method !== undefined && typeof m.method !== "string") return "method must be a string";
  if (m.params !== undefined && (typeof m.params !== "object" || m.params === null))
    return "params must be an object or an array";
  return undefined;
}

/**
 * Reads the body of a POST: one JSON-RPC message or a batch, else the JSON-RPC answer a client gets instead —
 * -32700 for what is not strict JSON, -32600 for what is not a message or disagrees with its `Mcp-Method` and
 * `Mcp-Name` headers (a gateway routing by header and a server reading the body must not see two different calls).
 */
export function readMessage(bytes: Uint8Array, headers: Headers): ReadMessage {
  let value: unknown;
  try {
    value = parseStrictRequest(bytes);
  } catch (e) {
    if (!(e instanceof MalformedJson)) throw e;
    // JSON-RPC 2.0 §5.1: -32700 Parse error, with a null id (none could be read).
    return { ok: false, response: rpcError(null, -32700, `Parse error: ${e.message}`, 400) };
  }
  const messages = Array.isArray(value) ? value : [value];
  if (messages.length === 0) return { ok: false, response: rpcError(null, -32600, "Invalid Request: an empty batch", 400) };
  for (const message of messages) {
    const why = invalid(message);
    if (why) return { ok: false, response: rpcError((message as RpcMessage | null)?.id, -32600, `Invalid Request: ${why}`, 400) };
  }
  const m = messages[0] as RpcMessage;
  const mismatch = Array.isArray(value)
    ? headers.has("mcp-method") || headers.has("mcp-name")
      ? `Mcp-Method says ${headers.get("mcp-method")}, the body is a batch`
      : undefined
    : routingHeaderMismatch(m, headers);
  // A 2026-07-28 request (its _meta names the protocol version) gets that revision's code for it (SEP-2243 HeaderMismatch).
  if (mismatch) return { ok: false, response: rpcError(m.id, claimsEnvelope(value) ? HEADER_MISMATCH : -32600, mismatch, 400) };
  return { ok: true, message: value as RpcMessage | RpcMessage[] };
}

const encoder = new TextEncoder();

/** The checked message as the bytes sent on. */
export const serialiseMessage = (message: RpcMessage | RpcMessage[]): Uint8Array => encoder.encode(JSON.stringify(message));
