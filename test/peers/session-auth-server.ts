import type { IncomingMessage } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { startHTTPServer } from "mcp-proxy";
import { freePort } from "./ports";

/**
 * An MCP server as fastmcp serves one over HTTP — fastmcp's HTTP transport is `mcp-proxy`'s startHTTPServer with the
 * server's `authenticate` hook — that wants an `x-api-key` header. Like fastmcp it answers 401 "No valid session ID"
 * to a GET stream opened before `initialize`, whatever the key. A refused key is echoed in its answer, as some
 * servers do. `sessions` counts the sessions made (one per initialize), `key` is the key it accepts now.
 */
export async function startSessionAuthServer(key: string) {
  const port = await freePort();
  const state = { key, sessions: 0 };
  const server = await startHTTPServer({
    host: "127.0.0.1",
    port,
    eventStore: false,
    authenticate: async (request: IncomingMessage) =>
      request.headers["x-api-key"] === state.key
        ? { user: "test" }
        : { authenticated: false, error: `Unauthorized: unknown API key ${String(request.headers["x-api-key"])}` },
    createServer: async () => {
      state.sessions++;
      const mcp = new McpServer({ name: "session-auth", version: "1.0.0" });
      mcp.registerTool("echo", { description: "Echoes" }, async () => ({ content: [{ type: "text" as const, text: "echo" }] }));
      return mcp;
    },
  });
  return { url: `http://127.0.0.1:${port}/mcp`, state, stop: () => server.close() };
}
