import { afterAll, beforeAll, expect, test } from "bun:test";
import { mailTools } from "../peers/mail-tools";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient, toolText } from "../support/mcp";

// A virtual server reaches its members through the proxy as the caller: a member's tool limit applies to the calls
// routed to it, and its refusal reaches the virtual server's client as the member's tool result.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const mail = mailTools(["send_email"]);

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mail.example", mail.fetch);
  alice = await t.user("alice");
});
afterAll(() => t.close());

test("a member's tool limit holds for calls through a virtual server; the refusal is a tool result and the session goes on", async () => {
  const id = await connectedConnector(alice.api, "https://mail.example/mcp");
  await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { rate_limits: { tools: { send_email: 1 } } } });
  const server = await alice.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Office", members: [{ connector_id: id, prefix: "mail" }] },
  });
  expect(server.status).toBe(201);
  const { client } = await mcpClient(server.body.mcp_url, { token: alice.token }, t.fetch);
  expect(toolText(await client.callTool({ name: "mail__send_email", arguments: {} }))).toBe("called send_email");
  const refused = await client.callTool({ name: "mail__send_email", arguments: {} });
  expect(refused.isError).toBe(true);
  expect(toolText(refused)).toContain("the tool send_email may be called 1 time a minute through this connector");
  expect(mail.calls.get("send_email")).toBe(1);
  t.clock.advance(60_000);
  expect(toolText(await client.callTool({ name: "mail__send_email", arguments: {} }))).toBe("called send_email");
  await client.close();
  const records = (await alice.api("GET", `/api/v1/audit?virtual_server_id=${server.body.id}&outcome=rate_limited`)).body.items;
  expect(records).toMatchObject([{ connector_id: id, name: "send_email", method: "tools/call" }]);
});
