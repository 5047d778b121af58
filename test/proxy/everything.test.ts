import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Peer } from "../peers/everything";
import { mcpClient, proxyUrl, startProxiedEverything, toolText as text } from "../support/mcp";
import { waitFor } from "../support/wait";
import type { TestService } from "../support/service";

// The reference server, @modelcontextprotocol/server-everything (2025-11-25, stateful sessions), behind the proxy.
let upstream: Peer;
let service: TestService;
let id: string;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ upstream, service, id, stop } = await startProxiedEverything());
});
afterAll(async () => {
  await stop();
});

describe("an MCP client through the proxy", () => {
  test("initializes, lists tools and calls them exactly as directly", async () => {
    const viaProxy = await mcpClient(proxyUrl(service, id));
    const direct = await mcpClient(upstream.url, null);
    expect(viaProxy.client.getServerVersion()).toEqual(direct.client.getServerVersion()!);
    expect(viaProxy.client.getServerCapabilities()).toEqual(direct.client.getServerCapabilities()!);
    expect(viaProxy.transport.sessionId).toMatch(/.+/);

    const tools = await viaProxy.client.listTools();
    expect(tools).toEqual(await direct.client.listTools());
    expect(tools.tools.map((t) => t.name)).toContain("trigger-long-running-operation");

    expect(text(await viaProxy.client.callTool({ name: "echo", arguments: { message: "through the proxy" } }))).toBe(
      "Echo: through the proxy",
    );
    const sum = await viaProxy.client.callTool({ name: "get-sum", arguments: { a: 19, b: 23 } });
    expect(sum).toEqual(await direct.client.callTool({ name: "get-sum", arguments: { a: 19, b: 23 } }));
    expect(text(sum)).toContain("42");
    await viaProxy.close();
    await direct.close();
  });

  test("progress notifications arrive as they are sent, not buffered until the result", async () => {
    const { client, close } = await mcpClient(proxyUrl(service, id));
    const arrivals: number[] = [];
    const started = performance.now();
    const result = await client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
      undefined,
      { onprogress: () => arrivals.push(performance.now() - started), timeout: 20_000 },
    );
    const finished = performance.now() - started;
    expect(text(result)).toContain("Long running operation completed");
    expect(arrivals.length).toBe(4);
    // Steps are 250 ms apart upstream: each notification must reach the client near its own step time.
    for (let i = 0; i < 4; i++) expect(arrivals[i]!).toBeGreaterThan(250 * (i + 1) - 100);
    expect(arrivals[0]!).toBeLessThan(finished - 500);
    for (let i = 1; i < 4; i++) expect(arrivals[i]! - arrivals[i - 1]!).toBeGreaterThan(150);
    await close();
  });

  test("the GET notification stream relays server-initiated notifications", async () => {
    const { client, transport, close } = await mcpClient(proxyUrl(service, id));
    const messages: { data?: unknown }[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      messages.push(n.params);
    });
    await client.setLoggingLevel("debug");
    // Starts log messages that belong to no request (one at once, then every 5 s): the server sends them on the
    // session's GET stream only, so receiving one proves the proxy relays that stream.
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await waitFor("a log message", () => messages.length > 0, 10_000);
    expect(String(messages[0]!.data)).toContain(`SessionId ${transport.sessionId}`);
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    const gets = service.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.method === "GET" && l.path === `/api/v1/connectors/${id}/mcp`);
    expect(gets.some((l) => l.status === 200)).toBe(true);
    await close();
  });

  test("DELETE ends the session at the server", async () => {
    const { client, transport, close } = await mcpClient(proxyUrl(service, id));
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    await close();
    // The session is gone upstream: a request naming it is refused (server-everything answers 400 or 404).
    const res = await service.api("POST", `/api/v1/connectors/${id}/mcp`, {
      headers: {
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
        accept: "application/json, text/event-stream",
      },
      body: { jsonrpc: "2.0", id: 9, method: "tools/list", params: {} },
    });
    expect([400, 404]).toContain(res.status);
    void client;
  });
});
