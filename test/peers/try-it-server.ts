import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { statefulMcp } from "./stateful-mcp";

export type TryItServer = {
  url: string;
  /** Sessions the server started, and those a client ended with DELETE. */
  sessions: { started: number; ended: number };
  stop(): Promise<void>;
};

/** The server's tools, prompt and resource: one of each kind of field a form is made for, progress, and both kinds of error. */
function serverFor(): McpServer {
  const mcp = new McpServer({ name: "try-it-server", version: "1.2.3" });
  mcp.registerTool(
    "echo",
    { description: "Says back what it is given", inputSchema: { message: z.string().describe("What to say back") } },
    async ({ message }) => ({ content: [{ type: "text", text: `echo: ${message}` }] }),
  );
  mcp.registerTool(
    "add",
    {
      description: "Adds two numbers",
      inputSchema: { a: z.number(), b: z.number().int() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } }),
  );
  mcp.registerTool(
    "greet",
    {
      description: "Greets in a style",
      inputSchema: { style: z.enum(["plain", "loud"]), exclaim: z.boolean().optional(), name: z.string().optional() },
    },
    async ({ style, exclaim, name }) => {
      const text = `hello ${name ?? "you"}`;
      return { content: [{ type: "text", text: `${style === "loud" ? text.toUpperCase() : text}${exclaim ? "!" : ""}` }] };
    },
  );
  mcp.registerTool(
    "slow",
    { description: "Counts to `steps`, reporting progress", inputSchema: { steps: z.number().int().min(1).max(10) } },
    async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await Bun.sleep(100);
        if (token !== undefined)
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
          });
      }
      return { content: [{ type: "text", text: `counted to ${steps}` }] };
    },
  );
  mcp.registerTool("fail", { description: "Always reports an error", inputSchema: {} }, async () => ({
    isError: true,
    content: [{ type: "text", text: "this tool always fails" }],
  }));
  mcp.registerPrompt("summarize", { description: "Summarize a text", argsSchema: { text: z.string() } }, ({ text }) => ({
    messages: [{ role: "user", content: { type: "text", text: `Summarize: ${text}` } }],
  }));
  mcp.registerResource("readme", "test://readme", { description: "A text resource", mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, text: "the readme's text" }],
  }));
  return mcp;
}

/**
 * A stateful MCP server (the SDK's McpServer over Streamable HTTP, event-stream answers) on 127.0.0.1, for the
 * console's "Try it": sessions with ids, progress notifications, DELETE counted. Any path serves MCP, so one server
 * can stand for two URLs.
 */
export async function startTryItServer(): Promise<TryItServer> {
  const { fetch, sessions } = statefulMcp(serverFor);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 30, fetch });
  return { url: `http://127.0.0.1:${server.port}`, sessions, stop: () => server.stop(true) };
}
