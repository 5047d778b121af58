import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { statefulMcp } from "./stateful-mcp";

/**
 * A stateful MCP server (the SDK's McpServer over Streamable HTTP) on 127.0.0.1 whose answers carry its label, so a
 * test sees which of several servers with the same tool names a call reached. It counts calls by tool and sessions
 * started and ended; `restart()` forgets every session on the same port (a member that lost its sessions: 404).
 * `json`: it answers requests with JSON, never an event stream.
 */
export async function startLabelledServer(label: string, options: { json?: boolean } = {}) {
  const calls = new Map<string, number>();
  const count = (tool: string) => calls.set(tool, (calls.get(tool) ?? 0) + 1);
  const mcp = () => {
    const server = new McpServer({ name: `labelled-${label}`, version: "1.0.0" });
    server.registerTool(
      "echo",
      { description: `Echo of ${label}`, inputSchema: { message: z.string() } },
      async ({ message }) => {
        count("echo");
        return { content: [{ type: "text", text: `${label}: ${message}` }] };
      },
    );
    server.registerTool("secret", { description: `A tool ${label}'s policy may hide`, inputSchema: {} }, async () => {
      count("secret");
      return { content: [{ type: "text", text: `${label}: secret` }] };
    });
    server.registerTool("slow", { description: "Reports progress twice", inputSchema: {} }, async (_args, extra) => {
      count("slow");
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= 2; i++)
        if (token !== undefined)
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: 2 },
          });
      return { content: [{ type: "text", text: `${label}: slow done` }] };
    });
    server.registerPrompt("hello", { description: "Says hello", argsSchema: { name: z.string() } }, ({ name }) => ({
      messages: [{ role: "user", content: { type: "text", text: `${label} says hello to ${name}` } }],
    }));
    server.registerResource(
      "note",
      new ResourceTemplate(`test://${label}/notes/{id}`, { list: undefined }),
      { mimeType: "text/plain" },
      async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `${label}'s note ${String(id)}` }] }),
    );
    server.registerResource("readme", `test://${label}/readme`, { mimeType: "text/plain" }, async (uri) => ({
      contents: [{ uri: uri.href, text: `${label}'s readme` }],
    }));
    return server;
  };

  const { fetch, sessions, forget } = statefulMcp(mcp, options);
  let server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 30, fetch });
  const port = server.port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    sessions,
    /** Stops and starts again on the same port, every session forgotten. */
    async restart() {
      await server.stop(true);
      forget();
      server = Bun.serve({ hostname: "127.0.0.1", port, idleTimeout: 30, fetch });
    },
    stop: () => server.stop(true),
  };
}
