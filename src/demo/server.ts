import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { VERSION } from "../version";
import { registerAsk, registerCountdown } from "./interactive";

/** What the demo server says it is, in `initialize` and in the `about` resource. */
export const DEMO_INSTRUCTIONS =
  "The demo server built into connector-service: it needs no network and no sign-in. Try `echo` and `add`, " +
  "`countdown` for progress notifications, and `ask`, which asks you a question through elicitation.";

/**
 * The demo MCP server (`connector-service demo-server`, the `mcp+stdio://demo` preset): a first connector that works
 * offline, on the binary alone, and shows each kind of exchange a client meets — plain tool calls, progress, a
 * question to the user (elicitation), a prompt and a resource.
 */
export function createDemoServer(): McpServer {
  const server = new McpServer(
    { name: "connector-service-demo", title: "connector-service demo", version: VERSION },
    { instructions: DEMO_INSTRUCTIONS },
  );

  server.registerTool(
    "echo",
    {
      title: "Echo",
      description: "Returns the text it is given.",
      inputSchema: { text: z.string().max(10_000).describe("What to send back") },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );

  server.registerTool(
    "add",
    {
      title: "Add",
      description: "Adds two numbers.",
      inputSchema: { a: z.number().describe("First number"), b: z.number().describe("Second number") },
      outputSchema: { sum: z.number() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } }),
  );

  registerCountdown(server);
  registerAsk(server);

  server.registerPrompt(
    "greet",
    {
      title: "Greet someone",
      description: "A prompt that asks the model to greet someone by name.",
      argsSchema: { name: z.string().max(200).describe("Who to greet") },
    },
    ({ name }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Please greet ${name} warmly, in one sentence.` } }],
    }),
  );

  server.registerResource(
    "about",
    "demo://about",
    { title: "About this server", description: "What the demo server is and what it offers.", mimeType: "text/markdown" },
    async (uri) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: "text/markdown",
          text: `# connector-service demo ${VERSION}\n\n${DEMO_INSTRUCTIONS}\n\nThe prompt \`greet\` takes a name.\n`,
        },
      ],
    }),
  );

  return server;
}
