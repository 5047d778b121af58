import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { startEverything, type Peer } from "../peers/everything";
import { startModernServer } from "../peers/mcp-proxy";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient, toolText } from "../support/mcp";

// A tool policy against real servers over sockets: server-everything with the SDK's client (2025-11-25 sessions),
// and the 2026-07-28 era through mcp-proxy with the v2 SDK client pinned to it (Mcp-Method / Mcp-Name headers). The
// service reaches them over real sockets; the clients reach the service through `app.handle`.
const POLICY = { deny: ["get-env"], rename: { echo: "say" }, descriptions: { echo: "Says it back" } };
let everything: Peer;
let modern: Peer;
let t: TestApp;

beforeAll(async () => {
  [everything, modern, t] = await Promise.all([startEverything(), startModernServer(), createTestApp({ realNetwork: true })]);
}, 30_000);
afterAll(async () => {
  await t.close();
  await Promise.all([everything.stop(), modern.stop()]);
});

async function withPolicy(url: string) {
  const id = await connectedConnector(t.api, url);
  expect((await t.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: POLICY } })).status).toBe(200);
  return id;
}
const proxyUrl = (id: string) => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;

describe("server-everything with a tool policy", () => {
  test("2025-11-25 sessions: the denied tool is gone and refused, the renamed one is listed and called by its new name", async () => {
    const id = await withPolicy(everything.url);
    const { client, close } = await mcpClient(proxyUrl(id), { token: t.admin.token }, t.handle);
    const tools = (await client.listTools()).tools;
    const names = tools.map((tool) => tool.name);
    expect(names).toContain("say");
    expect(names).not.toContain("echo");
    expect(names).not.toContain("get-env");
    expect(tools.find((tool) => tool.name === "say")!.description).toBe("Says it back");
    expect(toolText(await client.callTool({ name: "say", arguments: { message: "through the policy" } }))).toBe(
      "Echo: through the policy",
    );
    await expect(client.callTool({ name: "get-env", arguments: {} })).rejects.toThrow(/Unknown tool/);
    await close();
  });

  test("2026-07-28 through mcp-proxy: the same, with the routing headers", async () => {
    const id = await withPolicy(modern.url);
    const fetchWithAuth = (input: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${t.admin.token}`);
      return t.fetch(input, { ...init, headers });
    };
    const client = new ModernClient({ name: "modern-policy", version: "1.0.0" }, {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    } as never);
    await client.connect(new ModernTransport(new URL(proxyUrl(id)), { fetch: fetchWithAuth }));
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain("say");
    expect(names).not.toContain("get-env");
    expect(JSON.stringify(await client.callTool({ name: "say", arguments: { message: "modern" } }))).toContain("Echo: modern");
    await expect(client.callTool({ name: "get-env", arguments: {} })).rejects.toThrow(/Unknown tool/);
    await client.close();
  });
});
