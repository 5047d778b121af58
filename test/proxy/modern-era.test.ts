import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startModernServer } from "../peers/mcp-proxy";
import type { Peer } from "../peers/everything";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// MCP 2026-07-28: no initialize and no session; every POST names its method in Mcp-Method (and tool in Mcp-Name).
// The service reaches the server (mcp-proxy) over a real socket; clients reach the service through `app.handle`.
let upstream: Peer;
let t: TestApp;
let id: string;
let proxyUrl: string;
let authorization: string;

beforeAll(async () => {
  [upstream, t] = await Promise.all([startModernServer(), createTestApp({ realNetwork: true })]);
  id = await connectedConnector(t.api, upstream.url);
  proxyUrl = `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
  authorization = `Bearer ${t.admin.token}`;
}, 30_000);
afterAll(async () => {
  await t.close();
  await upstream.stop();
});

const MODERN = "2026-07-28";

/** The SDK v2 client pinned to 2026-07-28, recording the headers it sent. */
async function modernClient(url: string, authorization?: string) {
  const sent: Record<string, string>[] = [];
  const fetchWithAuth = (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    if (authorization) headers.set("authorization", authorization);
    sent.push(Object.fromEntries(headers));
    return t.fetch(input, { ...init, headers });
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithAuth });
  const client = new Client({ name: "modern-test", version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: MODERN } },
  } as never);
  await client.connect(transport);
  return { client, sent };
}

test("a 2026-07-28 client gets through the proxy what it gets directly", async () => {
  const direct = await modernClient(upstream.url);
  const proxied = await modernClient(proxyUrl, authorization);
  const call = { name: "echo", arguments: { message: "modern era" } };
  const [a, b] = [await direct.client.callTool(call), await proxied.client.callTool(call)];
  expect(b).toEqual(a);
  expect(JSON.stringify(b)).toContain("Echo: modern era");
  expect(await proxied.client.listTools()).toEqual(await direct.client.listTools());
  // It really spoke 2026-07-28: per-request version and routing headers, and no session.
  const toolCall = proxied.sent.find((h) => h["mcp-method"] === "tools/call")!;
  expect(toolCall).toMatchObject({ "mcp-protocol-version": MODERN, "mcp-name": "echo" });
  expect(proxied.sent.every((h) => h["mcp-session-id"] === undefined)).toBe(true);
  await direct.client.close();
  await proxied.client.close();
});

test("a raw 2026-07-28 request with Mcp-Method and Mcp-Name gets the same answer through the proxy", async () => {
  const body = {
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: {
      name: "get-sum",
      arguments: { a: 2, b: 40 },
      _meta: {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
      },
    },
  };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": "get-sum",
  };
  const direct = await fetch(upstream.url, { method: "POST", headers, body: JSON.stringify(body) });
  const proxied = await t.fetch(proxyUrl, {
    method: "POST",
    headers: { ...headers, authorization },
    body: JSON.stringify(body),
  });
  expect(proxied.status).toBe(direct.status);
  expect(proxied.headers.get("content-type")).toBe(direct.headers.get("content-type"));
  const [d, p] = [await direct.json(), await proxied.json()];
  expect(p).toEqual(d);
  expect(JSON.stringify(p)).toContain("42");

  // Without the routing headers the server refuses it, through the proxy as directly.
  const { "mcp-method": _m, "mcp-name": _n, ...bare } = headers;
  const refusedDirect = await fetch(upstream.url, { method: "POST", headers: bare, body: JSON.stringify(body) });
  expect(refusedDirect.status).toBe(400);
  const refusedProxied = await t.fetch(proxyUrl, {
    method: "POST",
    headers: { ...bare, authorization },
    body: JSON.stringify(body),
  });
  expect(refusedProxied.status).toBe(refusedDirect.status);
  expect(await refusedProxied.json()).toEqual(await refusedDirect.json());
});
