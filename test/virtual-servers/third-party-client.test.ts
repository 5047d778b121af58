import { afterAll, beforeAll, expect, test } from "bun:test";
import { createMCPClient } from "@ai-sdk/mcp";
import { startLabelledServer } from "../peers/labelled-server";
import { connectedConnector } from "../support/mcp";
import { startTestService, type TestService, type TestUser } from "../support/service";

// A virtual server as a third-party MCP client sees it: the AI SDK's MCP client (@ai-sdk/mcp, its own implementation
// of the protocol, not the MCP SDK's), given the virtual server's URL and an API token, over a real socket; two real
// MCP servers with the same tool names as members.
const one = await startLabelledServer("one");
const two = await startLabelledServer("two");
let service: TestService;
let alice: TestUser;
let mcpUrl: string;

beforeAll(async () => {
  service = await startTestService();
  alice = await service.user("alice");
  const members = [
    { connector_id: await connectedConnector(alice.api, one.url), prefix: "one" },
    { connector_id: await connectedConnector(alice.api, two.url), prefix: "two" },
  ];
  const created = await alice.api("POST", "/api/v1/virtual-servers", { body: { name: "Both", members } });
  expect(created.status).toBe(201);
  mcpUrl = created.body.mcp_url;
});
afterAll(async () => {
  await service.stop();
  await Promise.all([one.stop(), two.stop()]);
});

test("the AI SDK's MCP client lists both members' tools under their prefixes, calls one, gets a prompt, reads a resource", async () => {
  const client = await createMCPClient({
    transport: { type: "http", url: mcpUrl, headers: { authorization: `Bearer ${alice.token}` } },
  });
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["one__echo", "two__echo", "one__slow", "two__slow"]));

    // Its tool set, as an agent built on the AI SDK calls it.
    const tools = await client.tools();
    expect(Object.keys(tools)).toEqual(expect.arrayContaining(["one__echo", "two__echo"]));
    const called = (await tools["two__echo"]!.execute!(
      { message: "from the AI SDK" },
      { toolCallId: "call-1", messages: [] },
    )) as {
      content: unknown[];
    };
    expect(called.content[0]).toEqual({ type: "text", text: "two: from the AI SDK" });
    expect(two.calls.get("echo")).toBe(1);
    expect(one.calls.get("echo")).toBeUndefined();

    const prompt = await client.experimental_getPrompt({ name: "one__hello", arguments: { name: "Ada" } });
    expect(prompt.messages[0]!.content).toEqual({ type: "text", text: "one says hello to Ada" });
    const read = await client.readResource({ uri: "test://two/readme" });
    expect(read.contents[0]).toMatchObject({ text: "two's readme" });
  } finally {
    await client.close();
  }
}, 60_000);
