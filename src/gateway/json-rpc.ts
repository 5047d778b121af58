/**
 * The JSON-RPC errors the gateways answer at the transport level (before any server process sees the request).
 * Both gateways use these, so a client sees the same codes whichever one serves it.
 */

/** An unknown or ended session: HTTP 404 and -32001, as the MCP SDK's own Streamable HTTP transport answers. */
export const SESSION_NOT_FOUND = -32001;
/** Any other refusal of the gateway (no session header, too many sessions, the server did not start). */
export const GATEWAY_ERROR = -32000;

/** A JSON-RPC error answer that belongs to no request ([JSON-RPC 2.0 §5](https://www.jsonrpc.org/specification#response_object): `id` null). */
export const jsonRpcError = (status: number, message: string, code = GATEWAY_ERROR) =>
  Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });

export const sessionNotFound = () => jsonRpcError(404, "Session not found", SESSION_NOT_FOUND);
