import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { SQL } from "bun";
import { startEverything } from "../peers/everything";
import { startLabelledServer } from "../peers/labelled-server";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { authorizeInBrowser, startOidcProvider, type OidcPeer } from "../peers/oidc";
import type { Peer } from "../peers/ports";
import { apiClient, ADMIN } from "../support/service";
import { finishCallback } from "../support/callback";
import { mcpClient, toolText as text } from "../support/mcp";
import { runSuite, SCENARIOS } from "../support/conformance";
import { startCluster, type Cluster } from "../support/replicas";
import { waitFor } from "../support/wait";

// Three replicas of the compiled binary on one PostgreSQL database behind nginx round-robin (no sticky sessions).
let cluster: Cluster;
let everything: Peer;
let op: OidcPeer;
let protectedServer: OAuthMcpServer;
beforeAll(async () => {
  [cluster, everything, op] = await Promise.all([
    startCluster(3),
    startEverything(),
    startOidcProvider({ accessTokenTtl: 3600 }),
  ]);
  protectedServer = startOAuthMcpServer(op.issuer);
}, 60_000);
afterAll(async () => {
  await Promise.all([cluster?.stop(), everything?.stop(), op?.stop(), protectedServer?.stop()]);
});

const basic = `Basic ${btoa(`${ADMIN.username}:${ADMIN.password}`)}`;
/** A stateless MCP initialize sent to one replica's proxy; its status. */
const initializeOn = (base: string, id: string) =>
  fetch(`${base}/api/v1/connectors/${id}/mcp`, {
    method: "POST",
    headers: { authorization: basic, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    }),
  }).then(async (r) => (await r.arrayBuffer(), r.status));

/** Connect on the first replica, the user's callback on the second (the balancer's URL, replaced): connected. */
async function authorizedConnector(): Promise<string> {
  const [first, second] = cluster.replicas;
  const api = apiClient(first!.url);
  const id = (await api("POST", "/api/v1/connectors", { body: { url: protectedServer.url } })).body.id as string;
  const connect = await api("POST", `/api/v1/connectors/${id}/connect`);
  expect(connect.body.state).toBe("auth_required");
  const callback = new URL(await authorizeInBrowser(connect.body.auth_request.authorization_url, op.issuer));
  expect(callback.origin).toBe(cluster.url); // the public URL every replica shares
  // The person's browser at the public URL: the landing and the confirmation both reach the second replica.
  const toSecond = (request: Request) =>
    fetch(new Request(`${second!.url}${new URL(request.url).pathname}${new URL(request.url).search}`, request));
  const landed = await finishCallback(toSecond, callback.href, ADMIN);
  expect(landed.status).toBe(200);
  return id;
}

/** Proxied MCP requests each replica served for this connector (from its request log). */
const servedBy = (id: string) =>
  cluster.replicas.map(
    (r) => r.lines().filter((l) => l.includes(`"path":"/api/v1/connectors/${id}/mcp"`) && l.includes('"msg":"request"')).length,
  );

describe("through the balancer, requests alternating between replicas", () => {
  test("create → connect with headers → an MCP session: initialize, tools, progress, the GET stream, DELETE", async () => {
    const created = await cluster.api("POST", "/api/v1/connectors", { body: { url: everything.url } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const connected = await cluster.api("POST", `/api/v1/connectors/${id}/connect`, {
      body: { headers: { "x-api-key": "replicated" } },
    });
    expect(connected.body).toMatchObject({ state: "connected", header_names: ["x-api-key"] });

    const { client, transport, close } = await mcpClient(`${cluster.url}/api/v1/connectors/${id}/mcp`);
    expect(transport.sessionId).toMatch(/.+/);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("echo");
    for (let i = 0; i < 6; i++)
      expect(text(await client.callTool({ name: "echo", arguments: { message: `n${i}` } }))).toBe(`Echo: n${i}`);
    const progress: number[] = [];
    const long = await client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
      undefined,
      {
        onprogress: (p) => void progress.push(p.progress),
        timeout: 20_000,
      },
    );
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

describe("a virtual server through the balancer", () => {
  test("one client session served by every replica goes on in one upstream session per member; DELETE on one ends it on all", async () => {
    const member = await startLabelledServer("member");
    try {
      const created = await cluster.api("POST", "/api/v1/connectors", { body: { url: member.url } });
      const connectorId = created.body.id as string;
      expect((await cluster.api("POST", `/api/v1/connectors/${connectorId}/connect`, { body: {} })).body.state).toBe("connected");
      const vs = await cluster.api("POST", "/api/v1/virtual-servers", {
        body: { name: "Across", members: [{ connector_id: connectorId, prefix: "m" }] },
      });
      expect(vs.status).toBe(201);
      const path = `/api/v1/virtual-servers/${vs.body.id}/mcp`;
      const { started, ended } = member.sessions; // connect's own handshake

      const { client, transport, close } = await mcpClient(`${cluster.url}${path}`);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("m__echo");
      for (let i = 0; i < 6; i++)
        expect(text(await client.callTool({ name: "m__echo", arguments: { message: `n${i}` } }))).toBe(`member: n${i}`);
      // Every replica answered requests of the one session, and the member saw one session opened for it.
      const served = cluster.replicas.map(
        (r) => r.lines().filter((l) => l.includes(`"path":"${path}"`) && l.includes('"msg":"request"')).length,
      );
      expect(served.every((n) => n > 0)).toBe(true);
      expect(member.sessions.started - started).toBe(1);

      // DELETE through the balancer ends it everywhere: each replica then answers the session's id with 404.
      const sessionId = transport.sessionId!;
      await transport.terminateSession();
      await close();
      expect(member.sessions.ended - ended).toBe(1);
      await Bun.sleep(1100); // SESSION_RECHECK_MS: a replica's own copy is trusted this long
      for (const replica of cluster.replicas) {
        const res = await fetch(`${replica.url}${path}`, {
          method: "POST",
          headers: {
            authorization: basic,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-session-id": sessionId,
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
        });
        expect(res.status).toBe(404);
      }
    } finally {
      await member.stop();
    }
  }, 60_000);
});

describe("the conformance kit through the balancer", () => {
  test("every check of the server suite ends the same through three replicas as against the server directly", async () => {
    const out = mkdtempSync(join(tmpdir(), "cs-conformance-replicas-"));
    try {
      const id = (await cluster.api("POST", "/api/v1/connectors", { body: { url: everything.url } })).body.id as string;
      await cluster.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
      const direct = await runSuite(everything.url, join(out, "direct"));
      const balanced = await runSuite(
        `${cluster.url}/api/v1/connectors/${id}/mcp`.replace("http://", `http://${ADMIN.username}:${ADMIN.password}@`),
        join(out, "balanced"),
      );
      expect([...balanced.keys()].sort()).toEqual([...SCENARIOS].sort());
      for (const scenario of SCENARIOS)
        expect({ scenario, checks: balanced.get(scenario) }).toEqual({ scenario, checks: direct.get(scenario) });
      expect(servedBy(id).every((n) => n > 0)).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
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
    await waitFor(
      "b and c to refuse it",
      async () =>
        (await b!("GET", "/api/v1/connectors", { as: asToken })).status === 401 &&
        (await c!("GET", "/api/v1/connectors", { as: asToken })).status === 401,
      5_000,
    );
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
        headers: {
          authorization: `Basic ${btoa(`${ADMIN.username}:${ADMIN.password}`)}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      }).then(async (r) => (await r.arrayBuffer(), r.status));
    expect(await ping(b)).toBe(200);
    expect((await apiClient(a!.url)("POST", `/api/v1/connectors/${id}/disconnect`)).body.state).toBe("disconnected");
    const at = performance.now();
    await waitFor("b to refuse", async () => (await ping(b)) === 409, 5_000);
    expect(performance.now() - at).toBeLessThan(1_500);
  });
});

describe("OAuth across replicas", () => {
  test("connect on one, callback on another, proxy through a third; concurrent 401s on all three refresh once", async () => {
    const id = await authorizedConnector();
    const third = cluster.replicas[2]!;
    expect((await apiClient(third.url)("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    expect(await initializeOn(third.url, id)).toBe(200);

    // The server stops accepting every token it has seen: each replica's next request gets a 401 and refreshes.
    protectedServer.rejectTokensSeenSoFar();
    const before = op.refreshed.count;
    const statuses = await Promise.all(cluster.replicas.map((r) => initializeOn(r.url, id)));
    expect(statuses).toEqual([200, 200, 200]);
    const refreshes = op.refreshed.count - before;
    console.log(`refreshes at the authorization server for 3 concurrent 401s on 3 replicas: ${refreshes}`);
    expect(refreshes).toBe(1);
    expect((await cluster.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
  }, 30_000);

  test("a replica killed with SIGKILL mid-refresh: another takes over when its lease runs out; the connector stays connected", async () => {
    const id = await authorizedConnector();
    const [a, b] = cluster.replicas;
    op.slowTokenEndpoint(5_000);
    protectedServer.rejectTokensSeenSoFar();
    const before = op.refreshed.count;
    const onA = initializeOn(a!.url, id).catch(() => "killed");
    // a holds the grant's refresh lease and waits for the token endpoint: now it dies.
    const db = new SQL(cluster.databaseUrl, { max: 1 });
    try {
      await waitFor(
        "a to hold the lease",
        async () => (await db`SELECT lease_owner FROM oauth_grants WHERE connector_id = ${id}`)[0]?.lease_owner,
        5_000,
      );
      await a!.kill();
    } finally {
      await db.close();
    }
    op.slowTokenEndpoint(0);
    const started = performance.now();
    expect(await initializeOn(b!.url, id)).toBe(200);
    const waited = performance.now() - started;
    console.log(
      `a refresh lease left by a killed replica was taken over after ${waited.toFixed(0)} ms (lease: 20 s from its start)`,
    );
    expect(waited).toBeLessThan(22_000);
    expect(op.refreshed.count - before).toBe(1);
    expect((await cluster.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    expect(await onA).toBe("killed");
    await a!.restart();
  }, 60_000);
});

describe("a replica killed with SIGKILL", () => {
  test("mid-stream: the call streaming through it fails, a new session through the balancer works at once, the connector stays connected", async () => {
    const id = (await cluster.api("POST", "/api/v1/connectors", { body: { url: everything.url } })).body.id as string;
    await cluster.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    const victim = cluster.replicas[0]!;
    // A long tool call streaming progress through the replica that is about to die.
    const { client, close } = await mcpClient(`${victim.url}/api/v1/connectors/${id}/mcp`);
    let progressed!: () => void;
    const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
    const call = client
      .callTool({ name: "trigger-long-running-operation", arguments: { duration: 5, steps: 10 } }, undefined, {
        onprogress: () => progressed(),
        timeout: 8_000,
      })
      .then(
        () => "answered",
        () => "failed",
      );
    await firstProgress;
    const killedAt = performance.now();
    await victim.kill();

    // Through the balancer, a new session works at once: nginx passes the refused connection to another replica.
    const { client: again, close: closeAgain } = await mcpClient(`${cluster.url}/api/v1/connectors/${id}/mcp`);
    expect(text(await again.callTool({ name: "echo", arguments: { message: "after the kill" } }))).toBe("Echo: after the kill");
    console.log(`first successful request after the kill: ${(performance.now() - killedAt).toFixed(0)} ms`);
    await closeAgain();
    // The call that was streaming through the dead replica fails for its client (the SDK retries it there until it
    // times out); nothing else is lost.
    expect(await call).toBe("failed");
    await close().catch(() => undefined);
    expect((await cluster.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    await victim.restart();
    expect((await fetch(`${victim.url}/readyz`)).status).toBe(200);
  }, 60_000);
});
