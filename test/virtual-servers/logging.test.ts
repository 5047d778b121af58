import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { EmptyResultSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startEverything } from "../peers/everything";
import type { Peer } from "../peers/ports";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { waitFor } from "../support/wait";

// logging/setLevel through a virtual server (MCP 2025-11-25 server/utilities/logging): the level reaches the member
// (server-everything, which logs at random while told to), and its messages reach the client on its GET stream.
let everything: Peer;
let t: TestApp;
let mcpUrl: string;

beforeAll(async () => {
  [everything, t] = await Promise.all([startEverything(), createTestApp({ realNetwork: true })]);
  const id = await connectedConnector(t.api, everything.url);
  const created = await t.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Logs", members: [{ connector_id: id, prefix: "e" }] },
  });
  mcpUrl = created.body.mcp_url;
}, 30_000);
afterAll(async () => {
  await t.close();
  await everything.stop();
});

test("the client's level reaches the member; the member's log messages reach the client; a bad level is -32602", async () => {
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${t.admin.token}`);
    return t.fetch(request);
  };
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: fetchFn });
  const client = new Client({ name: "logging-test", version: "1.0.0" });
  await client.connect(transport);
  expect(client.getServerCapabilities()?.logging).toEqual({});
  const logged: { level: string }[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logged.push(n.params));

  await client.callTool({ name: "e__toggle-simulated-logging", arguments: {} });
  await client.setLoggingLevel("debug");
  await waitFor("a log message from the member", () => logged.length > 0, 15_000);
  await client.callTool({ name: "e__toggle-simulated-logging", arguments: {} });

  await expect(
    client.request({ method: "logging/setLevel", params: { level: "loud" as never } }, EmptyResultSchema),
  ).rejects.toThrow(/Invalid level/);
  await client.close();
}, 30_000);
