import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  EmptyResultSchema,
  ListRootsResultSchema,
  RootsListChangedNotificationSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { statefulMcp } from "./stateful-mcp";

/**
 * A stateful MCP server (the SDK's McpServer over Streamable HTTP) on 127.0.0.1 that talks back during its calls: it
 * elicits, samples and lists roots (each on the call's own stream), runs a call until it is cancelled, adds a tool
 * (its list_changed), and announces updates of a resource its client subscribed to. It counts what reached it.
 * `resumable`: its event streams carry event ids and can be resumed (Last-Event-ID).
 */
export async function startInteractiveServer(label: string, options: { resumable?: boolean } = {}) {
  // `listening`: GET streams it opened (a notification sent before its session's is open is lost, as MCP allows).
  const seen = {
    cancelled: 0,
    progress: 0,
    listening: 0,
    rootsChanged: 0,
    /** The answers to the elicitations "later" made after its call, on its GET stream. */
    later: [] as string[],
    subscribed: [] as string[],
    unsubscribed: [] as string[],
  };
  const mcp = () => {
    const server = new McpServer({ name: `interactive-${label}`, version: "1.0.0" });
    server.server.registerCapabilities({ resources: { subscribe: true, listChanged: true } });
    server.server.setRequestHandler(SubscribeRequestSchema, (request) => {
      seen.subscribed.push(request.params.uri);
      return {};
    });
    server.server.setNotificationHandler(RootsListChangedNotificationSchema, () => void seen.rootsChanged++);
    server.server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
      seen.unsubscribed.push(request.params.uri);
      return {};
    });
    server.registerResource("status", `test://${label}/status`, { mimeType: "text/plain" }, async (uri) => ({
      contents: [{ uri: uri.href, text: `${label} is fine` }],
    }));

    server.registerTool("ask", { description: "Elicits, samples and lists roots", inputSchema: {} }, async (_args, extra) => {
      const answer = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: `${label} wants a colour`,
            requestedSchema: { type: "object", properties: { colour: { type: "string" } } },
          },
        },
        ElicitResultSchema,
      );
      const sample = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: `${label} asks` } }], maxTokens: 10 },
        },
        CreateMessageResultSchema,
        { onprogress: () => void seen.progress++ },
      );
      const roots = await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema);
      const text = sample.content.type === "text" ? sample.content.text : "?";
      return {
        content: [
          {
            type: "text",
            text: `${label}: ${answer.action} ${String(answer.content?.colour)}; ${text}; ${roots.roots.map((r) => r.uri).join(",")}`,
          },
        ],
      };
    });

    server.registerTool(
      "elicit",
      { description: "Elicits only, saying its note", inputSchema: { note: z.string().optional() } },
      async ({ note }, extra) => {
        const answer = await extra.sendRequest(
          {
            method: "elicitation/create",
            params: { mode: "form", message: `${label} asks ${note ?? ""}`, requestedSchema: { type: "object", properties: {} } },
          },
          ElicitResultSchema,
        );
        return { content: [{ type: "text", text: `${label}: ${answer.action} ${note ?? ""}` }] };
      },
    );

    server.registerTool(
      "impatient",
      { description: "Elicits, and gives up after 100 ms", inputSchema: {} },
      async (_args, extra) => {
        // The SDK (1.32) ignores a cancellation of request id 0 (`!requestId`): a ping takes that id first.
        await extra.sendRequest({ method: "ping" }, EmptyResultSchema);
        const answer = await extra
          .sendRequest(
            {
              method: "elicitation/create",
              params: { mode: "form", message: "quick", requestedSchema: { type: "object", properties: {} } },
            },
            ElicitResultSchema,
            { timeout: 100 },
          )
          .catch(() => undefined);
        return { content: [{ type: "text", text: `${label}: ${answer ? answer.action : "gave up"}` }] };
      },
    );

    server.registerTool("later", { description: "Elicits after its call, on its GET stream", inputSchema: {} }, async () => {
      setTimeout(() => {
        void server.server
          .elicitInput({ mode: "form", message: `${label} later`, requestedSchema: { type: "object", properties: {} } })
          .then((answer) => seen.later.push(answer.action))
          .catch((error: Error) => seen.later.push(`error: ${error.message}`));
      }, 20);
      return { content: [{ type: "text", text: `${label}: later` }] };
    });

    server.registerTool("capabilities", { description: "What its client offered", inputSchema: {} }, async () => ({
      content: [{ type: "text", text: JSON.stringify(server.server.getClientCapabilities() ?? {}) }],
    }));

    server.registerTool(
      "wait",
      { description: "Reports progress, then waits until cancelled", inputSchema: {} },
      (_args, extra) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined)
          void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: 1 } });
        return new Promise((resolve) =>
          extra.signal.addEventListener("abort", () => {
            seen.cancelled++;
            resolve({ content: [{ type: "text", text: "cancelled" }] });
          }),
        );
      },
    );

    server.registerTool("grow", { description: "Adds a tool (list_changed follows)", inputSchema: {} }, async () => {
      if (!server.isConnected()) return { content: [{ type: "text", text: "no" }] };
      server.registerTool("grown", { description: "Added by grow", inputSchema: {} }, async () => ({
        content: [{ type: "text", text: `${label}: grown` }],
      }));
      return { content: [{ type: "text", text: `${label}: grew` }] };
    });

    server.registerTool("touch", { description: "Announces an update of its status", inputSchema: {} }, async () => {
      await server.server.sendResourceUpdated({ uri: `test://${label}/status` });
      return { content: [{ type: "text", text: `${label}: touched` }] };
    });
    return server;
  };

  const { fetch, sessions } = statefulMcp(mcp, options);
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const response = await fetch(request);
      if (request.method === "GET" && response.ok) seen.listening++;
      return response;
    },
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, seen, sessions, stop: () => server.stop(true) };
}
