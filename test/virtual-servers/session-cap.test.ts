import { afterAll, beforeAll, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// VIRTUAL__MAX_SESSIONS_PER_USER: a client that initializes in a loop holds at most that many sessions (each may hold
// an upstream session per member); one more initialize is a 429 with Retry-After until one ends.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let mcpUrl: string;

beforeAll(async () => {
  t = await createTestApp({ env: { VIRTUAL__MAX_SESSIONS_PER_USER: "2" } });
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  const id = await connectedConnector(alice.api, "https://mcp.example/mcp");
  mcpUrl = (await alice.api("POST", "/api/v1/virtual-servers", { body: { name: "Cap", members: [{ connector_id: id }] } })).body
    .mcp_url;
});
afterAll(() => t.close());

const send = (token: string, body: unknown, sessionId?: string, method = "POST", url = mcpUrl) =>
  t.handle(
    new Request(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(sessionId && { "mcp-session-id": sessionId }),
      },
      ...(method === "POST" && { body: JSON.stringify(body) }),
    }),
  );
const initialize = (token: string, url = mcpUrl) =>
  send(
    token,
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "loop", version: "1" } },
    },
    undefined,
    "POST",
    url,
  );

test("the third session of a user is a 429 until one ends; another user's are counted apart", async () => {
  const first = await initialize(alice.token);
  const second = await initialize(alice.token);
  expect([first.status, second.status]).toEqual([200, 200]);
  const third = await initialize(alice.token);
  expect(third.status).toBe(429);
  expect(third.headers.get("retry-after")).toBe("60");
  expect((await third.json()).detail).toContain("VIRTUAL__MAX_SESSIONS_PER_USER");
  // The administrator's sessions are counted apart from alice's.
  expect((await initialize(t.admin.token)).status).toBe(200);

  expect((await send(alice.token, null, first.headers.get("mcp-session-id")!, "DELETE")).status).toBe(204);
  expect((await initialize(alice.token)).status).toBe(200);
});

test("initializes sent at once are held to the limit too: no more sessions than VIRTUAL__MAX_SESSIONS_PER_USER", async () => {
  const bob = await t.user("bob");
  const created = await bob.api("POST", "/api/v1/virtual-servers", { body: { name: "Bob's", members: [] } });
  expect(created.status).toBe(201);
  const statuses = (await Promise.all(Array.from({ length: 30 }, () => initialize(bob.token, created.body.mcp_url)))).map(
    (r) => r.status,
  );
  // Each initialize counted the sessions, then opened one: thirty counting before any had opened passed together,
  // far past the limit.
  expect(statuses.filter((status) => status === 200)).toHaveLength(2);
  expect(statuses.filter((status) => status === 429)).toHaveLength(28);
});
