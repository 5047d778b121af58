import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { statefulMcp } from "./stateful-mcp";

/**
 * A stateful MCP server (sessions by Mcp-Session-Id: stateful-mcp.ts) with the tools `names`, each answering
 * "called <name>", counting the calls that reach it by tool: what a test of a limit needs to see that a refused call
 * never reached the server while the session went on.
 */
export function mailTools(names = ["send_email", "search", "archive"]) {
  const calls = new Map<string, number>();
  const server = statefulMcp(() => {
    const mcp = new McpServer({ name: "mail", version: "1.0.0" });
    for (const name of names)
      mcp.registerTool(name, { description: `The server's ${name}` }, async () => {
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return { content: [{ type: "text" as const, text: `called ${name}` }] };
      });
    return mcp;
  });
  return { ...server, calls };
}
