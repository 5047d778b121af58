import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startBearerServer, type BearerServer } from "../peers/bearer-server";
import { startEverything, type Peer } from "../peers/everything";
import { connectedConnector, mcpClient, proxyUrl } from "../support/mcp";
import { expectProblem, startTestService, type TestService } from "../support/service";

let upstream: BearerServer;
let open: Peer;
let service: TestService;

beforeAll(async () => {
  upstream = startBearerServer("upstream-key-1");
  open = await startEverything();
  service = await startTestService();
});
afterAll(async () => {
  await service.stop();
  await upstream.stop();
  await open.stop();
});

const whoami = async (url: string) => {
  const { client, close } = await mcpClient(url);
  const result = await client.callTool({ name: "whoami", arguments: { name: "n" } });
  await close();
  return JSON.parse((result.content as { text: string }[])[0]!.text);
};

describe("connect verifies credentials with an MCP handshake", () => {
  test("accepted headers are stored and injected; the client's Authorization and cookies never reach the server", async () => {
    const id = await connectedConnector(service.api, upstream.url, { Authorization: "Bearer upstream-key-1", "X-Tenant": "t-7" });
    expect(await whoami(proxyUrl(service, id))).toEqual({ name: "n", cookie: null, authorization: "Bearer upstream-key-1" });

    // A raw request carrying the client's own Authorization (Basic, for the service) and a cookie.
    upstream.seen.length = 0;
    const res = await fetch(proxyUrl(service, id), {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa("admin:admin-password-for-tests")}`,
        cookie: "session=client-cookie",
        "x-forwarded-for": "10.9.8.7",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
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
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: upstream.url } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: { headers: { Authorization: "Bearer wrong" } } });
    expectProblem(res, 422);
    expect(res.body.type).toBe("/problems/upstream-rejected-credentials");
    const after = await service.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body).toMatchObject({ state: "disconnected", header_names: [] });
    expect(after.body.disconnect_reason).toContain("401");
    expectProblem(await service.api("POST", `/api/v1/connectors/${created.body.id}/mcp`, { body: {} }), 409);
  });

  test("an open server connects without headers", async () => {
    const id = await connectedConnector(service.api, open.url);
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body).toMatchObject({ state: "connected", header_names: [] });
  });

  test("a server that answers 401 without OAuth metadata: 502, and the reason says what discovery found", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: upstream.url } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    expect(res.body.detail).toContain("OAuth authorization could not start");
    const after = await service.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body.state).toBe("disconnected");
    // No RFC 9728 metadata: the 2025-03-26 fallback finds no authorization server there either.
    expect(after.body.disconnect_reason).toContain("OAuth authorization could not start");
  });

  test("an unreachable server: 502 and a disconnect_reason that says so", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "http://127.0.0.1:9/mcp" } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    const after = await service.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body.state).toBe("disconnected");
    expect(after.body.disconnect_reason).toContain("Could not reach");
  });

  test("credentials revoked upstream later: the proxy answers 502 and the connector says why it is disconnected", async () => {
    const id = await connectedConnector(service.api, upstream.url, { Authorization: "Bearer upstream-key-1" });
    upstream.setToken("upstream-key-2");
    const res = await service.api("POST", `/api/v1/connectors/${id}/mcp`, {
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
    });
    expectProblem(res, 502);
    expect(res.headers.get("www-authenticate")).toBeNull();
    const after = await service.api("GET", `/api/v1/connectors/${id}`);
    expect(after.body.state).toBe("disconnected");
    expect(after.body.disconnect_reason).toContain("rejected the stored credentials");
    upstream.setToken("upstream-key-1");
  });
});
