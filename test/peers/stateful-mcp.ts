import { randomUUID } from "node:crypto";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";

/**
 * A fetch handler serving a fresh `McpServer` per MCP session (the SDK's Streamable HTTP transport, sessions by
 * `Mcp-Session-Id`), counting sessions started and ended (DELETE). A request naming an unknown session gets 404, as
 * MCP 2025-11-25 transports ("Session Management") says; `forget()` drops every session (a server that restarted).
 * `json`: requests are answered with JSON rather than an event stream (the transport's enableJsonResponse);
 * `resumable`: its event streams can be resumed (basic/transports "Resumability and Redelivery").
 */
export function statefulMcp(
  serverFor: () => McpServer,
  { json = false, resumable = false }: { json?: boolean; resumable?: boolean } = {},
) {
  let transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const sessions = { started: 0, ended: 0 };
  async function fetch(request: Request): Promise<Response> {
    const id = request.headers.get("mcp-session-id");
    if (id) {
      const transport = transports.get(id);
      if (!transport)
        return Response.json(
          { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } },
          { status: 404 },
        );
      if (request.method === "DELETE") sessions.ended++;
      return transport.handleRequest(request);
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      // Resumable: its events carry ids (the SDK's in-memory event store), and a GET with Last-Event-ID resumes them.
      ...(resumable && { eventStore: new InMemoryEventStore() }),
      onsessioninitialized: (sid) => {
        sessions.started++;
        transports.set(sid, transport);
      },
      onsessionclosed: (sid) => void transports.delete(sid),
    });
    await serverFor().connect(transport);
    return transport.handleRequest(request);
  }
  return { fetch, sessions, forget: () => void (transports = new Map()) };
}
