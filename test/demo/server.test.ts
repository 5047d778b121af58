import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema, ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { toolText as text } from "../support/mcp";

const ENTRY = resolve(import.meta.dir, "../../src/index.ts");

/** The demo server as the preset runs it from source: `bun src/index.ts demo-server`, a real process over stdio. */
async function demo(elicit?: (message: string) => ElicitResult) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ENTRY, "demo-server"],
    env: getDefaultEnvironment(),
    stderr: "pipe",
  });
  const client = new Client(
    { name: "demo-tests", version: "1.0.0" },
    { capabilities: elicit ? { elicitation: { form: {} } } : {} },
  );
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params.message));
  await client.connect(transport);
  opened.push(client);
  return client;
}
const opened: Client[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

describe("connector-service demo-server", () => {
  test("lists its tools, prompt and resource; echo and add answer", async () => {
    const client = await demo();
    expect(client.getServerVersion()?.name).toBe("connector-service-demo");
    expect(client.getInstructions()).toContain("needs no network");
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual(["add", "ask", "countdown", "echo"]);
    expect(text(await client.callTool({ name: "echo", arguments: { text: "hello, demo" } }))).toBe("hello, demo");
    const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 40.5 } });
    expect(text(sum)).toBe("42.5");
    expect(sum.structuredContent).toEqual({ sum: 42.5 });
    // A schema violation is a tool error the model can read, not a crash (MCP 2025-11-25, server/tools §error handling).
    const bad = await client.callTool({ name: "add", arguments: { a: "two", b: 1 } });
    expect(bad.isError).toBe(true);

    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(prompts).toEqual(["greet"]);
    const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
    expect(JSON.stringify(prompt.messages)).toContain("Ada");
    const resources = (await client.listResources()).resources.map((r) => r.uri);
    expect(resources).toEqual(["demo://about"]);
    const about = await client.readResource({ uri: "demo://about" });
    expect((about.contents[0] as { text: string }).text).toContain("connector-service demo");
  });

  test("countdown sends a progress notification each second, increasing, when asked for progress", async () => {
    const client = await demo();
    const seen: { progress: number; total?: number }[] = [];
    const result = await client.callTool({ name: "countdown", arguments: { seconds: 2 } }, CallToolResultSchema, {
      onprogress: (p) => seen.push({ progress: p.progress, total: p.total }),
    });
    expect(text(result)).toBe("Counted down 2 s.");
    expect(seen).toEqual([
      { progress: 0, total: 2 },
      { progress: 1, total: 2 },
    ]);
    const tooLong = await client.callTool({ name: "countdown", arguments: { seconds: 3600 } });
    expect(tooLong.isError).toBe(true);
  }, 30_000);

  test("ask puts the question to the user through elicitation and answers with what they said", async () => {
    const asked: string[] = [];
    const client = await demo((message) => {
      asked.push(message);
      return { action: "accept", content: { answer: "Grace" } };
    });
    expect(text(await client.callTool({ name: "ask", arguments: { question: "Who are you?" } }))).toBe("You answered: Grace");
    expect(asked).toEqual(["Who are you?"]);
  });

  test("ask says so when the user declines or cancels", async () => {
    let action: "decline" | "cancel" = "decline";
    const client = await demo(() => ({ action }));
    expect(text(await client.callTool({ name: "ask", arguments: {} }))).toBe("You declined to answer.");
    action = "cancel";
    expect(text(await client.callTool({ name: "ask", arguments: {} }))).toContain("cancelled");
  });

  test("ask without the client's elicitation capability is a tool error that says why", async () => {
    const client = await demo();
    const result = await client.callTool({ name: "ask", arguments: {} });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("does not support elicitation");
  });

  test("ends when its client closes stdin", async () => {
    const proc = Bun.spawn([process.execPath, ENTRY, "demo-server"], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    proc.stdin.end();
    expect(await proc.exited).toBe(0);
    expect(await new Response(proc.stdout).text()).toBe("");
  });
});
