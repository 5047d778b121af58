/** JSON-RPC 2.0 as the virtual server endpoint answers it (MCP 2025-11-25 basic: messages are JSON-RPC 2.0). */
export type RequestId = string | number;
export type JsonRpcMessage = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/** An answer the endpoint gives as a JSON-RPC error (never a problem document: the client speaks JSON-RPC here). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** JSON-RPC 2.0 §4: a string (any, "" too) or a number. */
export const isRequestId = (id: unknown): id is RequestId =>
  typeof id === "string" || (typeof id === "number" && Number.isFinite(id));

export const resultOf = (id: RequestId, result: unknown) => ({ jsonrpc: "2.0", id, result });
export const errorOf = (id: RequestId | null, error: RpcError) => ({
  jsonrpc: "2.0",
  id,
  error: { code: error.code, message: error.message, ...(error.data !== undefined && { data: error.data }) },
});

/** The answer of every plain 200: its headers made once (Bun copies a Headers object faster than it reads a record). */
const OK_JSON = { status: 200, headers: new Headers({ "content-type": "application/json" }) };

export const jsonAnswer = (body: unknown, status = 200, headers?: Record<string, string>) =>
  status === 200 && headers === undefined
    ? new Response(JSON.stringify(body), OK_JSON)
    : Response.json(body, { status, ...(headers && { headers }) });

const encoder = new TextEncoder();
/** One message as a server-sent event (MCP 2025-11-25 basic/transports: each event's data is one JSON-RPC message). */
export const sseEvent = (message: unknown) => encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" } as const;
