import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

export type BearerServer = {
  url: string;
  /** Headers of every request that reached the MCP handler, lower-cased names. */
  seen: Record<string, string>[];
  setToken(token: string): void;
  stop(): Promise<void>;
};

/**
 * A small MCP server (the SDK's own server side) that wants `Authorization: Bearer <token>`, like a
 * hosted server with an API key. Stateless: a server and transport per request, as the SDK shows.
 */
export function startBearerServer(initialToken: string): BearerServer {
  let token = initialToken;
  const seen: Record<string, string>[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const headers = Object.fromEntries(request.headers);
      if (request.headers.get("authorization") !== `Bearer ${token}`) {
        return new Response(JSON.stringify({ error: "invalid_token" }), {
          status: 401,
          headers: { "content-type": "application/json", "www-authenticate": 'Bearer error="invalid_token"' },
        });
      }
      seen.push(headers);
      const mcp = new McpServer({ name: "bearer-test-server", version: "1.0.0" });
      mcp.registerTool("whoami", { description: "Echoes the headers this server received", inputSchema: { name: z.string() } }, async ({ name }) => ({
        content: [{ type: "text", text: JSON.stringify({ name, cookie: headers.cookie ?? null, authorization: headers.authorization }) }],
      }));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      return transport.handleRequest(request);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/mcp`,
    seen,
    setToken: (t) => {
      token = t;
    },
    stop: () => server.stop(true),
  };
}
