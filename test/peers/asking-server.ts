import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { statefulMcp } from "./stateful-mcp";

/**
 * A 2025-only MCP server (the SDK's McpServer over Streamable HTTP, sessions kept) on 127.0.0.1 whose calls ask their
 * client, for parked calls (era-bridge): `ask` elicits a colour, then samples, then answers with both (two rounds of
 * input); `ask-then-wait` elicits, then works until it is cancelled. It counts the calls that reached it, the answers
 * to its questions, and the calls cancelled.
 */
export async function startAskingServer() {
  const seen = { calls: 0, answered: 0, working: 0, cancelled: 0 };
  const mcp = () => {
    const server = new McpServer({ name: "asking", version: "1.0.0" });
    const elicit = async (extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => {
      const answer = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: "Which colour?",
            requestedSchema: { type: "object", properties: { colour: { type: "string" } } },
          },
        },
        ElicitResultSchema,
      );
      seen.answered++;
      return answer;
    };
    server.registerTool("ask", { description: "Elicits, then samples", inputSchema: {} }, async (_args, extra) => {
      seen.calls++;
      const answer = await elicit(extra);
      const sample = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: "say something" } }], maxTokens: 10 },
        },
        CreateMessageResultSchema,
      );
      seen.answered++;
      const text = sample.content.type === "text" ? sample.content.text : "?";
      return { content: [{ type: "text", text: `${answer.action} ${String(answer.content?.colour)}; ${text}` }] };
    });
    server.registerTool(
      "ask-then-wait",
      { description: "Elicits, then works until cancelled", inputSchema: {} },
      async (_args, extra) => {
        seen.calls++;
        await elicit(extra);
        seen.working++;
        return new Promise((resolve) =>
          extra.signal.addEventListener("abort", () => {
            seen.cancelled++;
            resolve({ content: [{ type: "text", text: "cancelled" }] });
          }),
        );
      },
    );
    return server;
  };
  const { fetch } = statefulMcp(mcp);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch });
  return { url: `http://127.0.0.1:${server.port}/mcp`, seen, stop: () => server.stop(true) };
}
