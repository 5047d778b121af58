import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startModernOnlyServer } from "../peers/modern-only-server";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { connectedConnector, listingInSession, toolText } from "../support/mcp";
import { openTestStore } from "../support/store";

// A 2025 client (the MCP SDK v1 client) of a server that speaks only 2026-07-28, its requests alternating between two
// instances of the service on one store, as two replicas behind a round-robin balancer with no sticky sessions: the
// session the proxy keeps (era-bridge/legacy-sessions.ts) is in the store, so either instance takes it up; a session
// ended on one is ended on both. (A server's question during a call waits in the memory of the replica serving the call:
// the client's answer must reach that one, as for a virtual server's member.) Clients reach the instances through
// `app.handle`.
const modern = startModernOnlyServer();
const clock = steppedClock(Date.now());
let a: TestApp;
let b: TestApp;
let url: string;

beforeAll(async () => {
  const store = await openTestStore();
  const key = randomBytes(32);
  a = await createTestApp({ store, sealingKey: key, clock, realNetwork: true });
  b = await createTestApp({ store, sealingKey: key, clock, realNetwork: true, adminUsername: "admin-b" });
  url = `${a.publicUrl}/api/v1/connectors/${await connectedConnector(a.api, modern.url)}/mcp`;
}, 30_000);
afterAll(async () => {
  await Promise.all([a.services.proxy.closeBridges(), b.services.proxy.closeBridges()]);
  await a.close(); // the store both share
  await modern.stop();
});

/** Each request to the next instance in turn (a, b, a, …), as the administrator's token made on `a`. */
function roundRobin() {
  const served: string[] = [];
  let next = 0;
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const headers = new Headers(request.headers);
    headers.set("authorization", `Bearer ${a.admin.token}`);
    const app = next++ % 2 === 0 ? a : b;
    served.push(app === a ? "a" : "b");
    return app.handle(new Request(request, { headers }));
  };
  return { fetch, served };
}

/** A tools/list in session `session`, as the administrator's token (or `authorization`). */
function listing(session: string, authorization = `Bearer ${a.admin.token}`) {
  return listingInSession(url, session, authorization, 7);
}

async function legacyClient(fetch: ReturnType<typeof roundRobin>["fetch"]) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch });
  const client = new Client({ name: "legacy-replicas", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

test("one session, its requests alternating between the replicas: each takes it up and goes on as the client agreed", async () => {
  const { fetch, served } = roundRobin();
  const { client, transport } = await legacyClient(fetch);
  expect(client.getServerVersion()?.name).toBe("modern-only");
  const said: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void said.push(n.params.level));
  expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("echo");
  expect(toolText(await client.callTool({ name: "echo", arguments: { message: "one" } }))).toBe("Echo: one");
  // The level chosen on one replica is the session's on the other within a second.
  await client.setLoggingLevel("error");
  clock.advance(1_000);
  await client.callTool({ name: "log", arguments: {} });
  await client.callTool({ name: "log", arguments: {} });
  expect(said).toEqual(["error", "error"]);
  expect(new Set(served)).toEqual(new Set(["a", "b"]));
  expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  await client.close();
});

test("a session ended on one replica (DELETE) is ended on the other within a second; another credential finds nothing", async () => {
  const { fetch } = roundRobin();
  const { client, transport } = await legacyClient(fetch);
  const session = transport.sessionId!;
  const list = (app: TestApp, authorization?: string) => app.handle(listing(session, authorization));
  expect((await list(a)).status).toBe(200);
  expect((await list(b)).status).toBe(200);
  // The same user by Basic: another caller, who finds no such session on either replica.
  const basic = `Basic ${btoa(`${a.admin.basic.username}:${a.admin.basic.password}`)}`;
  expect((await list(b, basic)).status).toBe(404);
  const ended = await b.handle(
    new Request(url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${a.admin.token}`, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
    }),
  );
  expect(ended.status).toBe(200);
  expect((await list(b)).status).toBe(404);
  clock.advance(1_000);
  expect((await list(a)).status).toBe(404);
  await client.close().catch(() => undefined);
});

test("a session unused for longer than the idle limit is not taken up by another replica", async () => {
  const { client, transport } = await legacyClient((input, init) => {
    const request = new Request(input, init);
    const headers = new Headers(request.headers);
    headers.set("authorization", `Bearer ${a.admin.token}`);
    return a.handle(new Request(request, { headers }));
  });
  clock.advance(31 * 60_000);
  const answer = await b.handle(listing(transport.sessionId!));
  expect(answer.status).toBe(404);
  await client.close().catch(() => undefined);
});
