import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

export type BearerMcp = {
  /** Serves one request: the MCP SDK's own server, behind a bearer check. */
  handler(request: Request): Promise<Response>;
  /** Headers of every request that reached the MCP handler, lower-cased names. */
  seen: Record<string, string>[];
  setToken(token: string): void;
};

/**
 * A small MCP server (the SDK's own server side) that wants `Authorization: Bearer <token>`, like a
 * hosted server with an API key. Stateless: a server and transport per request, as the SDK shows. Tool
 * `whoami` echoes what the server received, so a test sees what the proxy sent.
 */
export function bearerMcp(initialToken: string): BearerMcp {
  let token = initialToken;
  const seen: Record<string, string>[] = [];
  return {
    seen,
    setToken: (t) => {
      token = t;
    },
    async handler(request) {
      const headers = Object.fromEntries(request.headers);
      if (request.headers.get("authorization") !== `Bearer ${token}`) {
        return new Response(JSON.stringify({ error: "invalid_token" }), {
          status: 401,
          headers: { "content-type": "application/json", "www-authenticate": 'Bearer error="invalid_token"' },
        });
      }
      seen.push(headers);
      const mcp = new McpServer({ name: "bearer-test-server", version: "1.0.0" });
      mcp.registerTool(
        "whoami",
        { description: "Echoes the headers this server received", inputSchema: { name: z.string() } },
        async ({ name }) => ({
          content: [
            {
              type: "text",
              text: JSON.stringify({ name, cookie: headers.cookie ?? null, authorization: headers.authorization }),
            },
          ],
        }),
      );
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      return transport.handleRequest(request);
    },
  };
}

export type BearerServer = BearerMcp & { url: string; stop(): Promise<void> };

/** The same server on a loopback port, for the end-to-end tests. */
export function startBearerServer(initialToken: string): BearerServer {
  const mcp = bearerMcp(initialToken);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: mcp.handler });
  return { ...mcp, url: `http://127.0.0.1:${server.port}/mcp`, stop: () => server.stop(true) };
}
