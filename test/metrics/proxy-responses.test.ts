import { expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { nativeRoutes, PROXY_ROUTE } from "../../src/http/native-routes";
import { scrape } from "./scrape";

// mcp_proxy_responses_total{status}: what the MCP client got, whoever answered it — the upstream, or the proxy itself
// (no credentials, another user's connector, a connector that is not connected, a body too large, an upstream gone).
const UPSTREAM = "https://scripted.example/mcp";

const mcpRequest = (
  t: TestApp,
  id: string,
  headers: Record<string, string>,
  body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
) =>
  new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });

const responses = async (t: TestApp) =>
  Object.fromEntries(
    [...(await scrape(t)).samples]
      .filter(([series]) => series.startsWith("mcp_proxy_responses_total"))
      .map(([series, v]) => [/status="(\d+)"/.exec(series)![1]!, v]),
  );

test("each proxy request counts once, under the status its client got, the proxy's own refusals included", async () => {
  // The header timeout is 50 ms here (the setting's own minimum is a second, too long for a test to wait).
  const t = await createTestApp({
    env: { PROXY__MAX_BODY_BYTES: "4096" },
    configure: (config) => void (config.proxy.upstreamTimeoutMs = 50),
  });
  const upstream = scriptedServer();
  try {
    t.network.serve(UPSTREAM, upstream.handler);
    const admin = { authorization: `Bearer ${t.admin.token}` };
    const ok = await connectedConnector(t.api, UPSTREAM);
    const idle = (await t.api("POST", "/api/v1/connectors", { body: { url: UPSTREAM } })).body.id as string;
    const bob = await t.user("bob");
    expect(await responses(t)).toEqual({});

    const statuses = [
      (await t.handle(mcpRequest(t, ok, admin))).status, // relayed
      (await t.handle(mcpRequest(t, ok, admin))).status,
      (await t.handle(mcpRequest(t, ok, {}))).status, // no credentials
      (await t.handle(mcpRequest(t, idle, admin))).status, // created, not connected
      (await t.handle(mcpRequest(t, ok, { authorization: `Bearer ${bob.token}` }))).status, // another user's
      (await t.handle(mcpRequest(t, ok, admin, "x".repeat(5000)))).status, // over PROXY__MAX_BODY_BYTES
    ];
    expect(statuses).toEqual([200, 200, 401, 409, 404, 413]);
    upstream.mode = "hang";
    expect((await t.handle(mcpRequest(t, ok, admin))).status).toBe(504);
    upstream.release();
    t.network.remove(UPSTREAM);
    expect((await t.handle(mcpRequest(t, ok, admin))).status).toBe(502);

    expect(await responses(t)).toEqual({ "200": 2, "401": 1, "404": 1, "409": 1, "413": 1, "502": 1, "504": 1 });
    // The upstream's statuses stay a series of their own: only what reached it, or failed on the way.
    const { samples, text } = await scrape(t);
    expect(samples.get('mcp_proxy_requests_total{status="200"}')).toBe(2);
    expect(samples.get('mcp_proxy_requests_total{status="502"}')).toBe(1);
    expect(samples.get('mcp_proxy_requests_total{status="504"}')).toBe(1);
    expect(samples.has('mcp_proxy_requests_total{status="401"}')).toBe(false);
    expect(text).toContain("# TYPE mcp_proxy_responses_total counter");
    expect(text).toMatch(/# HELP mcp_proxy_responses_total .+/);
  } finally {
    upstream.release();
    await t.close();
  }
});

test("Bun's native route goes through the same entry, so it counts the same way", async () => {
  const t = await createTestApp();
  const upstream = scriptedServer();
  try {
    t.network.serve(UPSTREAM, upstream.handler);
    const id = await connectedConnector(t.api, UPSTREAM);
    const route = nativeRoutes({ proxy: t.services.proxyEntry, virtual: t.services.virtualEntry }, t.deps.requestIds)[
      PROXY_ROUTE
    ];
    const routed = (request: Request) => Object.assign(request, { params: { id } });
    expect((await route.POST(routed(mcpRequest(t, id, { authorization: `Bearer ${t.admin.token}` })))).status).toBe(200);
    expect((await route.POST(routed(mcpRequest(t, id, {})))).status).toBe(401);
    // A CORS preflight is not an MCP request: not counted.
    expect(
      (
        await route.OPTIONS(
          routed(
            new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
              method: "OPTIONS",
              headers: { origin: "https://app.example", "access-control-request-method": "POST" },
            }),
          ),
        )
      ).status,
    ).toBe(204);
    expect(await responses(t)).toEqual({ "200": 1, "401": 1 });
  } finally {
    upstream.release();
    await t.close();
  }
});
