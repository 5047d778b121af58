import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startEverything } from "../peers/everything";
import type { Peer } from "../peers/ports";
import { apiClient, ADMIN } from "../support/service";
import { mcpClient, toolText as text } from "../support/mcp";
import { startCluster, type Cluster } from "../support/replicas";
import { waitFor } from "../support/wait";

// Three replicas of the compiled binary on one PostgreSQL database behind nginx round-robin (no sticky sessions).
let cluster: Cluster;
let everything: Peer;
beforeAll(async () => {
  [cluster, everything] = await Promise.all([startCluster(3), startEverything()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([cluster?.stop(), everything?.stop()]);
});

/** Proxied MCP requests each replica served for this connector (from its request log). */
const servedBy = (id: string) =>
  cluster.replicas.map((r) => r.lines().filter((l) => l.includes(`"path":"/api/v1/connectors/${id}/mcp"`) && l.includes('"msg":"request"')).length);

describe("through the balancer, requests alternating between replicas", () => {
  test("create → connect with headers → an MCP session: initialize, tools, progress, the GET stream, DELETE", async () => {
    const created = await cluster.api("POST", "/api/v1/connectors", { body: { url: everything.url } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const connected = await cluster.api("POST", `/api/v1/connectors/${id}/connect`, { body: { headers: { "x-api-key": "replicated" } } });
    expect(connected.body).toMatchObject({ state: "connected", header_names: ["x-api-key"] });

    const { client, transport, close } = await mcpClient(`${cluster.url}/api/v1/connectors/${id}/mcp`);
    expect(transport.sessionId).toMatch(/.+/);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("echo");
    for (let i = 0; i < 6; i++) expect(text(await client.callTool({ name: "echo", arguments: { message: `n${i}` } }))).toBe(`Echo: n${i}`);
    const progress: number[] = [];
    const long = await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } }, undefined, {
      onprogress: (p) => void progress.push(p.progress),
      timeout: 20_000,
    });
    expect(text(long)).toContain("Long running operation completed");
    expect(progress).toHaveLength(4);
    // Server-initiated messages reach the client on the session's GET stream, held by whichever replica it landed on.
    const logged: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logged.push(n.params));
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await waitFor("a log message on the GET stream", () => logged.length > 0, 10_000);
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await transport.terminateSession();
    await close();

    // Every replica took part in the one session: the proxy keeps no per-session state.
    expect(servedBy(id).every((n) => n > 0)).toBe(true);
  }, 60_000);
});

describe("what one replica changes, every replica sees", () => {
  test("a token revoked on one replica is refused by the others within the stated bound (1 s)", async () => {
    const [a, b, c] = cluster.replicas.map((r) => apiClient(r.url));
    const token = (await a!("POST", "/api/v1/tokens", { body: { name: "revoke-me" } })).body;
    const asToken = { token: token.token as string };
    // Used on b and c first, so that their caches hold the token's owner.
    expect((await b!("GET", "/api/v1/connectors", { as: asToken })).status).toBe(200);
    expect((await c!("GET", "/api/v1/connectors", { as: asToken })).status).toBe(200);
    expect((await a!("DELETE", `/api/v1/tokens/${token.id}`)).status).toBe(204);
    const revokedAt = performance.now();
    await waitFor("b and c to refuse it", async () => (await b!("GET", "/api/v1/connectors", { as: asToken })).status === 401 && (await c!("GET", "/api/v1/connectors", { as: asToken })).status === 401, 5_000);
    const bound = performance.now() - revokedAt;
    console.log(`revocation seen by every replica after ${bound.toFixed(0)} ms`);
    expect(bound).toBeLessThan(1_500);
  });

  test("a disconnect on one replica stops the proxy on the others within the bound", async () => {
    const id = (await cluster.api("POST", "/api/v1/connectors", { body: { url: everything.url } })).body.id as string;
    await cluster.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    const [a, b] = cluster.replicas;
    const ping = (replica: typeof a) =>
      fetch(`${replica!.url}/api/v1/connectors/${id}/mcp`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa(`${ADMIN.username}:${ADMIN.password}`)}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
      }).then(async (r) => (await r.arrayBuffer(), r.status));
    expect(await ping(b)).toBe(200);
    expect((await apiClient(a!.url)("POST", `/api/v1/connectors/${id}/disconnect`)).body.state).toBe("disconnected");
    const at = performance.now();
    await waitFor("b to refuse", async () => (await ping(b)) === 409, 5_000);
    expect(performance.now() - at).toBeLessThan(1_500);
  });
});
