import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

/** The longest countdown: the demo must not hold a server process (and a user's process place) for long. */
export const MAX_COUNTDOWN_SECONDS = 10;

/** How long `ask` waits for the person's answer. */
const ANSWER_TIMEOUT_MS = 5 * 60_000;

const text = (value: string) => [{ type: "text" as const, text: value }];

/**
 * `countdown`: a slow tool that reports its progress. Progress notifications go only to a request that asked for them
 * with a progressToken, and each one's `progress` increases (MCP 2025-11-25, basic/utilities/progress). Ends early,
 * with no answer, when the client cancels (notifications/cancelled aborts the handler's signal).
 */
export function registerCountdown(server: McpServer): void {
  server.registerTool(
    "countdown",
    {
      title: "Countdown",
      description: `Counts down from \`seconds\` (1 to ${MAX_COUNTDOWN_SECONDS}), one step a second, with a progress notification at each step.`,
      inputSchema: { seconds: z.number().int().min(1).max(MAX_COUNTDOWN_SECONDS).describe("How many seconds to count") },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ seconds }, extra) => {
      const progressToken = extra._meta?.progressToken;
      // Each step is announced as it starts, so the last notification comes a second before the result: one sent
      // just before the result can be lost by the client, as the SDK's is (it handles a notification a microtask
      // after reading it, and the result, read in the same chunk, has removed the progress handler by then).
      for (let done = 0; done < seconds; done++) {
        if (progressToken !== undefined)
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress: done, total: seconds, message: `${seconds - done} s left` },
          });
        await Bun.sleep(1_000);
        if (extra.signal.aborted) break;
      }
      return { content: text(`Counted down ${seconds} s.`) };
    },
  );
}

/**
 * `ask`: asks the user a question through elicitation (MCP 2025-11-25, client/elicitation) and says what came back.
 * Only a client that declared the `elicitation` capability may be sent `elicitation/create`; without it the tool
 * answers with a tool error that says so, rather than a request the client would refuse.
 */
export function registerAsk(server: McpServer): void {
  server.registerTool(
    "ask",
    {
      title: "Ask the user",
      description: "Asks you a question (through your MCP client's elicitation) and answers with what you said.",
      inputSchema: {
        question: z.string().min(1).max(500).default("What is your name?").describe("The question to ask"),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ question }, extra) => {
      if (!server.server.getClientCapabilities()?.elicitation) {
        return {
          isError: true,
          content: text(
            "Your MCP client does not support elicitation (it declared no `elicitation` capability), so this tool cannot ask you anything. Try it from a client that does.",
          ),
        };
      }
      const result = await server.server.elicitInput(
        {
          mode: "form",
          message: question,
          requestedSchema: {
            type: "object",
            properties: { answer: { type: "string", title: "Your answer", maxLength: 1000 } },
            required: ["answer"],
          },
        },
        // A person answers: more time than the SDK's 60 s default for a request.
        { relatedRequestId: extra.requestId, signal: extra.signal, timeout: ANSWER_TIMEOUT_MS },
      );
      if (result.action === "accept") return { content: text(`You answered: ${String(result.content?.answer ?? "")}`) };
      if (result.action === "decline") return { content: text("You declined to answer.") };
      return { content: text("You dismissed the question without answering (cancelled).") };
    },
  );
}
