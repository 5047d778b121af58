import { afterAll, beforeAll, expect, test } from "bun:test";
import { nativeRoutes, PROXY_ROUTE, VIRTUAL_MCP_ROUTE } from "../../src/http/native-routes";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpRequest } from "../support/mcp";

// Bun's native routes (http/native-routes.ts) serve the MCP URLs ahead of the Elysia app, which the tests reach through
// app.handle: here their handlers are called as Bun calls them (the path's id in `params`), so that what the app's
// hooks would do — the cross-site rule, credentials, the challenge — is seen to be done by the entries themselves.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const member = await startLabelledServer("one");
let virtualId: string;
let connectorId: string;

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true });
  alice = await t.user("alice");
  connectorId = await connectedConnector(alice.api, member.url);
  const made = await alice.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Native", members: [{ connector_id: connectorId, prefix: "one" }] },
  });
  virtualId = made.body.id;
});
afterAll(async () => {
  await t.close();
  await member.stop();
});

const routes = () => nativeRoutes({ proxy: t.services.proxyEntry, virtual: t.services.virtualEntry }, t.deps.requestIds);
const routed = (request: Request, id: string) => Object.assign(request, { params: { id } });
const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "native", version: "1" } },
});
const virtualUrl = () => `${t.publicUrl}/api/v1/virtual-servers/${virtualId}/mcp`;

test("a virtual server's MCP URL: a session opened, a listing merged, with the caller's Bearer token", async () => {
  const route = routes()[VIRTUAL_MCP_ROUTE];
  const opened = await route.POST(routed(mcpRequest(virtualUrl(), `Bearer ${alice.token}`, initialize), virtualId));
  expect(opened.status).toBe(200);
  const session = opened.headers.get("mcp-session-id")!;
  expect(session).toBeTruthy();
  const listing = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
  const listed = await route.POST(
    routed(mcpRequest(virtualUrl(), `Bearer ${alice.token}`, listing, { "mcp-session-id": session }), virtualId),
  );
  expect(listed.status).toBe(200);
  const names = ((await listed.json()) as { result: { tools: { name: string }[] } }).result.tools.map((tool) => tool.name);
  expect(names.length).toBeGreaterThan(0);
  expect(names.every((name) => name.startsWith("one__"))).toBe(true);
});

test("no credentials: 401 challenging for a token for this virtual server's URL (RFC 9728), as through the app", async () => {
  const res = await routes()[VIRTUAL_MCP_ROUTE].POST(routed(mcpRequest(virtualUrl(), undefined, initialize), virtualId));
  expect(res.status).toBe(401);
  expect(res.headers.get("content-type")).toStartWith("application/problem+json");
  expect(res.headers.get("www-authenticate")).toContain(
    `/.well-known/oauth-protected-resource/api/v1/virtual-servers/${virtualId}/mcp`,
  );
});

test("a page of another site with HTTP Basic (a browser's cached credentials) is refused before they are read", async () => {
  const basic = `Basic ${btoa(`${alice.basic.username}:${alice.basic.password}`)}`;
  for (const [route, url, id] of [
    [VIRTUAL_MCP_ROUTE, virtualUrl(), virtualId],
    [PROXY_ROUTE, `${t.publicUrl}/api/v1/connectors/${connectorId}/mcp`, connectorId],
  ] as const) {
    const res = await routes()[route].POST(
      routed(mcpRequest(url, basic, initialize, { "sec-fetch-site": "cross-site", origin: "https://evil.example" }), id),
    );
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toContain("HTTP Basic");
  }
});

test("an unknown virtual server is a 404 problem; a CORS preflight is answered without credentials", async () => {
  const unknown = "0196b1f2-7d40-7c11-8e5f-2a9b3c4d5e6f";
  const url = `${t.publicUrl}/api/v1/virtual-servers/${unknown}/mcp`;
  const res = await routes()[VIRTUAL_MCP_ROUTE].POST(routed(mcpRequest(url, `Bearer ${alice.token}`, initialize), unknown));
  expect(res.status).toBe(404);
  expect(res.headers.get("content-type")).toStartWith("application/problem+json");
  const preflight = await routes()[VIRTUAL_MCP_ROUTE].OPTIONS(
    routed(
      new Request(virtualUrl(), {
        method: "OPTIONS",
        headers: { origin: "https://app.example", "access-control-request-method": "POST" },
      }),
      virtualId,
    ),
  );
  expect(preflight.status).toBe(204);
});

test("an id the Elysia routes refuse (a control character, over 100 characters) gets the same 422 from the native routes", async () => {
  for (const [route, base] of [
    [PROXY_ROUTE, "connectors"],
    [VIRTUAL_MCP_ROUTE, "virtual-servers"],
  ] as const) {
    for (const [encoded, decoded] of [
      ["a%01b", "a\u0001b"],
      ["x".repeat(101), "x".repeat(101)],
    ] as const) {
      const url = `${t.publicUrl}/api/v1/${base}/${encoded}/mcp`;
      const through = await t.fetch(mcpRequest(url, `Bearer ${alice.token}`, initialize));
      const native = await routes()[route].POST(routed(mcpRequest(url, `Bearer ${alice.token}`, initialize), decoded));
      expect(native.status).toBe(422);
      expect(through.status).toBe(422);
      const [a, b] = [(await native.json()) as Record<string, unknown>, (await through.json()) as Record<string, unknown>];
      expect(a.detail).toBe(b.detail as string);
      expect(a.errors).toEqual(b.errors);
      const preflight = new Request(url, {
        method: "OPTIONS",
        headers: { origin: "https://app.example", "access-control-request-method": "POST" },
      });
      expect((await routes()[route].OPTIONS(routed(preflight, decoded))).status).toBe(422);
    }
  }
});
