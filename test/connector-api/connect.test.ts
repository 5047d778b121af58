import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearerMcp } from "../peers/bearer-server";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient } from "../support/mcp";
import { expectProblem } from "../support/api";

// Connect runs an MCP handshake against the server first; the servers here are the SDK's, in-process.
const BEARER = "https://keyed.example/mcp";
const OPEN = "https://open.example/mcp";
let t: TestApp;
const upstream = bearerMcp("upstream-key-1");

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve(BEARER, upstream.handler);
  t.network.serve(OPEN, scriptedServer().handler);
});
afterAll(() => t.close());

const proxyUrl = (id: string) => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
const whoami = async (id: string) => {
  const { client, close } = await mcpClient(proxyUrl(id), { token: t.admin.token }, t.handle);
  const result = await client.callTool({ name: "whoami", arguments: { name: "n" } });
  await close();
  return JSON.parse((result.content as { text: string }[])[0]!.text);
};

describe("connect verifies credentials with an MCP handshake", () => {
  test("accepted headers are stored and injected; the client's Authorization and cookies never reach the server", async () => {
    upstream.setToken("upstream-key-1");
    const id = await connectedConnector(t.api, BEARER, { Authorization: "Bearer upstream-key-1", "X-Tenant": "t-7" });
    expect(await whoami(id)).toEqual({ name: "n", cookie: null, authorization: "Bearer upstream-key-1" });

    // A raw request carrying the client's own Authorization (a token for the service) and a cookie.
    upstream.seen.length = 0;
    const res = await t.handle(
      new Request(proxyUrl(id), {
        method: "POST",
        headers: {
          authorization: `Bearer ${t.admin.token}`,
          cookie: "session=client-cookie",
          "x-forwarded-for": "10.9.8.7",
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      }),
    );
    expect(res.status).toBe(200);
    expect((await res.json()).result.tools[0].name).toBe("whoami");
    expect(upstream.seen).toHaveLength(1);
    const seen = upstream.seen[0]!;
    expect(seen.authorization).toBe("Bearer upstream-key-1");
    expect(seen["x-tenant"]).toBe("t-7");
    expect(seen.cookie).toBeUndefined();
    expect(seen["x-forwarded-for"]).toBeUndefined();
    expect(seen["mcp-protocol-version"]).toBe("2025-11-25");
  });

  test("refused headers: 422, nothing stored, the connector disconnected with the upstream's answer", async () => {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: BEARER } });
    const res = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`, {
      body: { headers: { Authorization: "Bearer wrong" } },
    });
    expectProblem(res, 422);
    expect(res.body.type).toBe("/problems/upstream-rejected-credentials");
    const after = await t.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body).toMatchObject({ state: "disconnected", header_names: [] });
    expect(after.body.disconnect_reason).toContain("401");
    expectProblem(await t.api("POST", `/api/v1/connectors/${created.body.id}/mcp`, { body: {} }), 409);
  });

  test("an open server connects without headers", async () => {
    const id = await connectedConnector(t.api, OPEN);
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body).toMatchObject({ state: "connected", header_names: [] });
  });

  test("a server that answers 401 with no OAuth metadata: 502 of type oauth-request-rejected; the reason says why and suggests headers", async () => {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: BEARER } });
    const res = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    // No RFC 9728 metadata: the 2025-03-26 fallback takes the server's origin as its authorization server, whose
    // registration endpoint answers 401 too.
    expect(res.body.type).toBe("/problems/oauth-request-rejected");
    expect(res.body.detail).toContain("OAuth authorization could not start");
    expect(res.body.detail).toContain("publishes no OAuth metadata");
    expect(res.body.detail).toContain("connect with `headers` instead");
    const after = await t.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body.state).toBe("disconnected");
    expect(after.body.disconnect_reason).toBe(res.body.detail);
  });

  test("an unreachable server: 502 and a disconnect_reason that says so", async () => {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: "http://127.0.0.1:9/mcp" } });
    const res = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    expect(res.body.type).toBe("/problems/upstream-failed");
    const after = await t.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body.state).toBe("disconnected");
    expect(after.body.disconnect_reason).toBe("Could not reach the MCP server: connection refused");
  });

  test("credentials revoked upstream later: the proxy answers 502 and the connector says why it is disconnected", async () => {
    upstream.setToken("upstream-key-1");
    const id = await connectedConnector(t.api, BEARER, { Authorization: "Bearer upstream-key-1" });
    upstream.setToken("upstream-key-2");
    try {
      const res = await t.api("POST", `/api/v1/connectors/${id}/mcp`, {
        headers: { accept: "application/json, text/event-stream" },
        body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
      });
      expectProblem(res, 502);
      expect(res.body.type).toBe("/problems/upstream-credentials-revoked");
      expect(res.headers.get("www-authenticate")).toBeNull();
      const after = await t.api("GET", `/api/v1/connectors/${id}`);
      expect(after.body.state).toBe("disconnected");
      expect(after.body.disconnect_reason).toContain("rejected the stored credentials");
    } finally {
      upstream.setToken("upstream-key-1");
    }
  });

  test("a connect again that fails keeps the working connection and its headers (an outage, or new headers refused)", async () => {
    upstream.setToken("upstream-key-1");
    const id = await connectedConnector(t.api, BEARER, { Authorization: "Bearer upstream-key-1" });
    t.network.remove(BEARER);
    try {
      const during = await t.api("POST", `/api/v1/connectors/${id}/connect`, {
        body: { headers: { Authorization: "Bearer upstream-key-2" } },
      });
      expectProblem(during, 502);
      expect(during.body.detail).toContain("keeps its current connection");
    } finally {
      t.network.serve(BEARER, upstream.handler);
    }
    const refused = await t.api("POST", `/api/v1/connectors/${id}/connect`, {
      body: { headers: { Authorization: "Bearer wrong" } },
    });
    expectProblem(refused, 422);
    expect(refused.body.detail).toContain("keeps its current connection");
    expect(await t.api("GET", `/api/v1/connectors/${id}`)).toMatchObject({
      body: { state: "connected", disconnect_reason: null, header_names: ["Authorization"] },
    });
    // The old headers still work through the proxy.
    expect(await whoami(id)).toEqual({ name: "n", cookie: null, authorization: "Bearer upstream-key-1" });
  });
});
