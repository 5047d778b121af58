import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/**
 * For an in-process MCP client (the SDK's Streamable HTTP client transport whose fetch is one of our own services: the
 * era bridge): a JSON answer to one of its requests, delivered here with a plain
 * parse instead of by the transport, which validates every message against the SDK's schema (a third of the era
 * bridge's CPU: bench/RESULTS.md "2026-07-28 clients"). The shape a JSON-RPC 2.0 answer must have (§5: `jsonrpc`,
 * an `id`, a `result` object or an `error` with a numeric code and a message) is checked here; what the result holds
 * is the caller's to read, as the SDK's loose result schema leaves it. The transport is told 202, with the headers (its
 * session id); the answer is delivered once the transport has read those (setImmediate: after the continuation of its
 * fetch). Anything else — an event stream, an HTTP error, a body that is not one JSON-RPC answer — goes to the
 * transport as it came.
 */
export async function answeredHere(response: Response, deliver: (message: JSONRPCMessage) => void): Promise<Response> {
  if (response.status !== 200 || !(response.headers.get("content-type") ?? "").startsWith("application/json")) return response;
  const text = await response.text();
  const answer = jsonRpcAnswer(text);
  if (!answer) return new Response(text, { status: response.status, headers: response.headers });
  setImmediate(() => deliver(answer));
  const headers = new Headers(response.headers);
  headers.delete("content-type");
  headers.delete("content-length");
  return new Response(null, { status: 202, headers });
}

/**
 * `text` as one JSON-RPC 2.0 answer (§5: `jsonrpc`, an `id`, a `result` object or an `error` with a numeric code and a
 * message); undefined when it is not one.
 */
export function jsonRpcAnswer(text: string): JSONRPCMessage | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  const answer = message as { jsonrpc?: unknown; id?: unknown; result?: unknown; error?: unknown } | undefined;
  const isAnswer =
    typeof answer === "object" &&
    answer !== null &&
    !Array.isArray(answer) &&
    answer.jsonrpc === "2.0" &&
    (typeof answer.id === "string" || typeof answer.id === "number") &&
    ((typeof answer.result === "object" && answer.result !== null && !Array.isArray(answer.result)) ||
      (typeof answer.error === "object" &&
        answer.error !== null &&
        typeof (answer.error as { code?: unknown }).code === "number" &&
        typeof (answer.error as { message?: unknown }).message === "string"));
  return isAnswer ? (answer as JSONRPCMessage) : undefined;
}
