import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { messageReadAlready } from "../http/read-already";
import { readRequestCapped } from "../http/read-capped";
import { MalformedJson, parseStrictRequest } from "../http/strict-json";
import { jsonRpcError } from "./json-rpc";

/** A session's transport, or one exchange's (the SDK's Streamable HTTP server transport). */
export type ServerTransport = WebStandardStreamableHTTPServerTransport;

/**
 * Which POSTs a session answers with one JSON body instead of an event stream. [MCP 2025-11-25 transports §"Sending
 * Messages to the Server"](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#sending-messages-to-the-server):
 * the server answers a POST of requests with either. An event stream is only needed to carry messages tied to a request
 * before its answer, and the only messages of a stdio server the gateway can tie to a request are its progress
 * notifications (by the request's progressToken; everything else goes to the GET stream). So a POST whose requests ask
 * for no progress is answered as JSON: no stream to build, relay and parse in the gateway, the proxy and the client
 * (bench/RESULTS.md, "Managed stdio").
 */

/** The largest POST body read, as the SDK's transport bounds it (its DEFAULT_MAX_REQUEST_BODY_SIZE): beyond, 413. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

type Message = { method?: unknown; id?: unknown; params?: { _meta?: { progressToken?: unknown } } };

export type PostBody = { parsed: unknown } | { refused: Response };

/** A JSON POST's body, read (to decide how to answer) and parsed; undefined for any other request, left unread. */
export async function readPostBody(request: Request): Promise<PostBody | undefined> {
  if (request.method !== "POST" || !(request.headers.get("content-type") ?? "").startsWith("application/json")) return undefined;
  // Built in-process (http/read-already.ts): its message, read strictly at the service's edge, and no body.
  const given = messageReadAlready(request);
  if (given !== undefined) return { parsed: given.message };
  const bytes = await readRequestCapped(request, MAX_BODY_BYTES);
  if (!bytes) return { refused: jsonRpcError(413, `Payload Too Large: Request body must not exceed ${MAX_BODY_BYTES} bytes`) };
  try {
    // Read as the proxy reads a message (http/strict-json.ts): what is sent on is what was checked.
    return { parsed: parseStrictRequest(bytes) };
  } catch (e) {
    if (!(e instanceof MalformedJson)) throw e;
    return { refused: jsonRpcError(400, `Parse error: ${e.message}`, -32700) };
  }
}

/** True when every message is an object, at least one is a request, and no request asks for progress or starts a session. */
function answerableAsJson(parsed: unknown): boolean {
  const messages = (Array.isArray(parsed) ? parsed : [parsed]) as unknown[];
  let requests = 0;
  for (const m of messages) {
    if (typeof m !== "object" || m === null) return false;
    const message = m as Message;
    if (message.method === undefined || message.id === undefined) continue;
    if (message.method === "initialize" || message.params?._meta?.progressToken !== undefined) return false;
    requests++;
  }
  return requests > 0;
}

/**
 * One request of a started session: a POST that asks for no progress is answered as JSON through a transport of its
 * own (`deliver` gets its messages, with that transport to answer through); anything else goes to the session's
 * transport (its `onmessage` gets the messages).
 */
export async function answerInSession(
  request: Request,
  session: ServerTransport,
  deliver: (message: JSONRPCMessage, via: ServerTransport) => void,
): Promise<Response> {
  const body = await readPostBody(request);
  if (body === undefined) return session.handleRequest(request);
  if ("refused" in body) return body.refused;
  if (!answerableAsJson(body.parsed)) return session.handleRequest(request, { parsedBody: body.parsed });
  return jsonExchange(request, body.parsed, session.sessionId, deliver);
}

/**
 * A transport for one POST of one session, answering it as JSON: the SDK's own transport in its stateless JSON mode
 * (the session was already checked by the gateway), which frames and validates as the session's transport does.
 * `deliver` gets the client's messages; the session sends the answers back through the transport returned.
 */
async function jsonExchange(
  request: Request,
  parsed: unknown,
  sessionId: string | undefined,
  deliver: (message: JSONRPCMessage, via: ServerTransport) => void,
): Promise<Response> {
  const exchange = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
  exchange.onmessage = (message) => deliver(message, exchange);
  await exchange.start();
  const response = await exchange.handleRequest(request, { parsedBody: parsed });
  // The session's transport names the session on every answer; this one does too.
  if (sessionId !== undefined && response.headers.get("content-type")?.startsWith("application/json"))
    response.headers.set("mcp-session-id", sessionId);
  return response;
}

/** What either gateway (gateway.ts: a process per session; shared.ts: one process shared) offers its HTTP server. */
export type Gateway = {
  /** Handles `/mcp` (MCP Streamable HTTP) and `/healthz`. */
  fetch(request: Request): Promise<Response>;
  /** Open MCP sessions. */
  sessionCount(): number;
  close(): Promise<void>;
};
