import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/**
 * An MCP server (the SDK's low-level server, stateless) whose tools come in pages of `pageSize` with cursors, and
 * which counts the calls that reach it by tool: what a test needs to see that a hidden tool is never called and that
 * a policy keeps the pages and their cursors. Each tool echoes its own name. `json`: JSON answers, else event streams.
 */
export function pagedToolsServer(names: string[], pageSize = 2, json = true) {
  const calls = new Map<string, number>();
  /** Descriptions a test changes between listings (else "The server's <name>"); `names` may change too. */
  const descriptions: Record<string, string> = {};
  return {
    calls,
    names,
    descriptions,
    async handler(request: Request): Promise<Response> {
      const server = new Server({ name: "paged", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async (req) => {
        const start = req.params?.cursor ? Number(req.params.cursor) : 0;
        const page = names.slice(start, start + pageSize);
        return {
          tools: page.map((name) => ({
            name,
            description: descriptions[name] ?? `The server's ${name}`,
            inputSchema: { type: "object" as const, properties: {} },
          })),
          ...(start + pageSize < names.length && { nextCursor: String(start + pageSize) }),
        };
      });
      server.setRequestHandler(CallToolRequestSchema, async (req) => {
        calls.set(req.params.name, (calls.get(req.params.name) ?? 0) + 1);
        return { content: [{ type: "text" as const, text: `called ${req.params.name}` }] };
      });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
      await server.connect(transport);
      return transport.handleRequest(request);
    },
  };
}
