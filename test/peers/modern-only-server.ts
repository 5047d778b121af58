import { createMcpHandler, inputRequired, McpServer, acceptedContent } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { Peer } from "./ports";

/**
 * An MCP server that speaks only 2026-07-28: the MCP SDK v2's `createMcpHandler` with `legacy: 'reject'` (a 2025
 * `initialize` is refused with the unsupported-protocol-version error), serving Streamable HTTP on 127.0.0.1, port 0,
 * in the test's process. Tools: `echo`; `log` (a debug and an error message); `slow` (progress notifications, then
 * its result); `ask-color` (asks the client through an `input_required` result with a form elicitation, answers with
 * what the client chose). A resource, `note://one`. `handler.notify` publishes list changes and resource updates to
 * open `subscriptions/listen` streams.
 */
export function startModernOnlyServer(): Peer & {
  notify: ReturnType<typeof createMcpHandler>["notify"];
  /** Calls of `slow` the server saw cancelled (their request's signal aborted). */
  cancelled: () => number;
} {
  let cancelled = 0;
  const factory = () => {
    const server = new McpServer(
      { name: "modern-only", version: "1.0.0" },
      {
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true }, logging: {} },
        instructions: "Only 2026-07-28 here.",
      },
    );
    server.registerResource("note", "note://one", { mimeType: "text/plain" }, async (uri) => ({
      contents: [{ uri: uri.href, text: "one" }],
    }));
    server.registerTool("echo", { inputSchema: z.object({ message: z.string() }) }, async ({ message }) => ({
      content: [{ type: "text", text: `Echo: ${message}` }],
    }));
    server.registerTool("slow", { inputSchema: z.object({ steps: z.number(), ms: z.number() }) }, async ({ steps, ms }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let step = 1; step <= steps; step++) {
        await new Promise((resolve, reject) => {
          const timer = setTimeout(resolve, ms);
          ctx.mcpReq.signal.addEventListener("abort", () => {
            cancelled++;
            clearTimeout(timer);
            reject(new Error("cancelled"));
          });
        });
        if (token !== undefined)
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: steps },
          });
      }
      return { content: [{ type: "text", text: `Done: ${steps}` }] };
    });
    server.registerTool("log", { inputSchema: z.object({}) }, async (_args, ctx) => {
      await ctx.mcpReq.log("debug", "a detail");
      await ctx.mcpReq.log("error", "a failure");
      return { content: [{ type: "text", text: "logged" }] };
    });
    server.registerTool("ask-color", { inputSchema: z.object({}) }, async (_args, ctx) => {
      const chosen = acceptedContent(ctx.mcpReq.inputResponses, "color");
      if (chosen === undefined)
        return inputRequired({
          inputRequests: {
            color: inputRequired.elicit({
              message: "Which color?",
              requestedSchema: { type: "object", properties: { color: { type: "string" } }, required: ["color"] },
            }),
          },
          requestState: "asked-once",
        });
      return { content: [{ type: "text", text: `Color: ${String(chosen.color)} (${ctx.mcpReq.requestState()})` }] };
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: "reject" });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: (request) => handler.fetch(request) });
  return {
    url: `http://127.0.0.1:${server.port}/mcp`,
    port: server.port!,
    notify: handler.notify,
    cancelled: () => cancelled,
    async stop() {
      await handler.close();
      server.stop(true);
    },
  };
}
