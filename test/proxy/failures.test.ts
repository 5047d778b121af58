import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearerMcp } from "../peers/bearer-server";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { expectProblem } from "../support/api";

// An upstream that streams, hangs or answers as the test says, reached in-process; the proxy's header timeout is
// 50 ms here (the setting's own minimum is a second, too long for a test to wait).
const SCRIPTED = "https://scripted.example/mcp";
const scripted = scriptedServer();
let t: TestApp;
let id: string;

beforeAll(async () => {
  t = await createTestApp({
    env: { PROXY__MAX_BODY_BYTES: "4096" },
    configure: (config) => void (config.proxy.upstreamTimeoutMs = 50),
  });
  t.network.serve(SCRIPTED, scripted.handler);
  id = await connectedConnector(t.api, SCRIPTED);
});
afterAll(() => {
  scripted.release();
  t.close();
});

const proxyUrl = (connectorId: string) => `${t.publicUrl}/api/v1/connectors/${connectorId}/mcp`;
const mcpPost = (connectorId: string, init: { signal?: AbortSignal; body?: BodyInit; headers?: Record<string, string> } = {}) =>
  t.handle(
    new Request(proxyUrl(connectorId), {
      method: "POST",
      signal: init.signal,
      headers: {
        authorization: `Bearer ${t.admin.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...init.headers,
      },
      body: init.body ?? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      // @ts-expect-error Bun's RequestInit takes duplex for streamed bodies
      duplex: "half",
    }),
  );

/** A metric's value as /metrics shows it (the sum over its label values). */
const metric = async (name: string, label = "") => {
  const text = await (await t.handle(new Request(`${t.publicUrl}/metrics`))).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}${label}`) && !l.startsWith("#"))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
};

describe("streams", () => {
  test("a client that goes away mid-stream frees the upstream stream at once", async () => {
    scripted.mode = "stream";
    try {
      const before = { ...scripted.streams };
      const client = new AbortController();
      const res = await mcpPost(id, { signal: client.signal });
      expect(res.headers.get("content-type")).toStartWith("text/event-stream");
      const reader = res.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("tick");
      expect(await metric("mcp_proxy_open_streams")).toBe(1);
      // What a client going away does to the server: its request is aborted and its response stream cancelled.
      client.abort();
      await reader.cancel();
      expect(scripted.streams).toEqual({ opened: before.opened + 1, cancelled: before.cancelled + 1 });
      expect(await metric("mcp_proxy_open_streams")).toBe(0);
    } finally {
      scripted.mode = "mcp";
    }
  });
});

describe("upstream failures", () => {
  test("no response headers within PROXY__UPSTREAM_TIMEOUT_SECONDS: 504, the connector stays connected", async () => {
    scripted.mode = "hang";
    try {
      const res = await mcpPost(id);
      expect(res.status).toBe(504);
      expect(res.headers.get("content-type")).toStartWith("application/problem+json");
      expect((await res.json()).detail).toBe("The MCP server sent no response within 0.05 s");
    } finally {
      scripted.mode = "mcp";
      scripted.release();
    }
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
  });

  test("upstream down: 502 problem, the connector stays connected", async () => {
    const down = "https://down.example/mcp";
    t.network.serve(down, bearerMcp("k").handler);
    const downId = await connectedConnector(t.api, down, { Authorization: "Bearer k" });
    t.network.remove(down);
    const res = await mcpPost(downId);
    expect(res.status).toBe(502);
    expect((await res.json()).detail).toBe("The MCP server could not be reached: connection refused");
    expect((await t.api("GET", `/api/v1/connectors/${downId}`)).body.state).toBe("connected");
  });
});

describe("request size", () => {
  const big = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "x", arguments: { blob: "y".repeat(10_000) } },
  });

  test("a body over PROXY__MAX_BODY_BYTES is a 413 problem naming it, declared length or not, and never reaches the server", async () => {
    const reached = t.network.requests.length;
    const declared = await mcpPost(id, { body: big, headers: { "content-length": String(big.length) } });
    expect(declared.status).toBe(413);
    expect(declared.headers.get("content-type")).toStartWith("application/problem+json");
    expect((await declared.json()).detail).toContain("PROXY__MAX_BODY_BYTES");
    expect(t.network.requests.length).toBe(reached);
    const streamed = await mcpPost(id, {
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < big.length; i += 1000) controller.enqueue(new TextEncoder().encode(big.slice(i, i + 1000)));
          controller.close();
        },
      }),
    });
    expect(streamed.status).toBe(413);
    expect((await streamed.json()).detail).toContain("PROXY__MAX_BODY_BYTES");
  });
});

describe("who may use the proxy", () => {
  test("another user gets 404; no credentials 401; a disconnected or never connected connector 409", async () => {
    const mallory = await t.user("mallory");
    expectProblem(await mallory.api("POST", `/api/v1/connectors/${id}/mcp`, { body: {} }), 404);
    const anon = await t.api("POST", `/api/v1/connectors/${id}/mcp`, { as: null, raw: "{}" });
    expectProblem(anon, 401);
    expect(anon.headers.get("www-authenticate")).toContain("Basic");

    const other = await connectedConnector(t.api, SCRIPTED);
    await t.api("POST", `/api/v1/connectors/${other}/disconnect`);
    const off = await t.api("POST", `/api/v1/connectors/${other}/mcp`, { body: {} });
    expectProblem(off, 409);
    expect(off.body.detail).toContain("disconnected");
    const created = (await t.api("POST", "/api/v1/connectors", { body: { url: SCRIPTED } })).body.id;
    expectProblem(await t.api("GET", `/api/v1/connectors/${created}/mcp`), 409);
  });

  test("methods other than POST, GET and DELETE are not routes", async () => {
    expectProblem(await t.api("PUT", `/api/v1/connectors/${id}/mcp`, { body: {} }), 404);
  });
});

test("metrics count proxied requests by status, upstream latency and connectors by state", async () => {
  const app = await createTestApp({ configure: (config) => void (config.proxy.upstreamTimeoutMs = 50) });
  const upstream = scriptedServer();
  try {
    app.network.serve(SCRIPTED, upstream.handler);
    const ok = await connectedConnector(app.api, SCRIPTED);
    const gone = await connectedConnector(app.api, SCRIPTED);
    await app.api("POST", `/api/v1/connectors/${gone}/disconnect`);
    const call = () =>
      app.api("POST", `/api/v1/connectors/${ok}/mcp`, {
        headers: { accept: "application/json, text/event-stream" },
        body: { jsonrpc: "2.0", id: 1, method: "ping" },
      });
    expect((await call()).status).toBe(200);
    upstream.mode = "hang";
    expect((await call()).status).toBe(504);
    upstream.release();
    app.network.remove(SCRIPTED);
    expect((await call()).status).toBe(502);

    const text = await (await app.handle(new Request(`${app.publicUrl}/metrics`))).text();
    expect(text).toContain('mcp_proxy_requests_total{status="200"} 1');
    expect(text).toContain('mcp_proxy_requests_total{status="504"} 1');
    expect(text).toContain('mcp_proxy_requests_total{status="502"} 1');
    expect(text).toContain('mcp_proxy_upstream_latency_seconds_bucket{le="+Inf"} 1');
    expect(text).toContain('connectors{state="connected"} 1');
    expect(text).toContain('connectors{state="disconnected"} 1');
  } finally {
    upstream.release();
    app.close();
  }
});
