import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { connectedConnector, toolText } from "../support/mcp";
import { sseReader } from "../support/sse";
import { openTestStore } from "../support/store";
import { waitFor } from "../support/wait";

// Two instances of the service on one store, as two replicas behind a balancer with no sticky sessions (the
// end-to-end form, three replicas of the binary behind nginx, is in test/replicas): a virtual server's client session
// opened on one is served by both, in one upstream session per member, and ended on both by a DELETE on either.
const member = await startLabelledServer("member");
let a: TestApp;
let b: TestApp;
let token: string;
let mcpUrl: string;

beforeAll(async () => {
  const store = await openTestStore();
  const key = randomBytes(32);
  const clock = steppedClock();
  a = await createTestApp({ store, sealingKey: key, clock, realNetwork: true });
  b = await createTestApp({ store, sealingKey: key, clock, realNetwork: true, adminUsername: "admin-b" });
  const alice = await a.user("alice");
  token = alice.token;
  const connectorId = await connectedConnector(alice.api, member.url);
  const created = await alice.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Across", members: [{ connector_id: connectorId, prefix: "m" }] },
  });
  mcpUrl = created.body.mcp_url;
});
afterAll(async () => {
  await a.close(); // the store both instances share
  await member.stop();
});

/** An SDK client whose requests go to the two instances in turn. */
async function alternating() {
  let turn = 0;
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${token}`);
    return (turn++ % 2 === 0 ? a : b).fetch(request);
  };
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: fetchFn });
  const client = new Client({ name: "replicas", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

/** tools/list in the session `sessionId`, sent to `instance` with `bearer`. */
const listWith = (instance: TestApp, bearer: string, sessionId: string) =>
  instance.fetch(
    new Request(mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${bearer}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessionId,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    }),
  );

test("a session opened on one instance is served by both in one upstream session; DELETE on one ends it on both", async () => {
  const { started, ended } = member.sessions;
  const { client, transport } = await alternating();
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("m__echo");
  for (let i = 0; i < 5; i++)
    expect(toolText(await client.callTool({ name: "m__echo", arguments: { message: `n${i}` } }))).toBe(`member: n${i}`);
  expect(member.sessions.started - started).toBe(1);

  // Another user holding the id gets what an unknown id gets, on the instance that has the session in memory and on
  // one that would load it from the store.
  const sessionId = transport.sessionId!;
  const bob = await b.user("bob");
  for (const instance of [a, b]) expect((await listWith(instance, bob.token, sessionId)).status).toBe(404);

  await transport.terminateSession();
  expect(member.sessions.ended - ended).toBe(1);
  a.clock.advance(2000); // past SESSION_RECHECK_MS: each instance asks the store again
  for (const instance of [a, b]) expect((await listWith(instance, token, sessionId)).status).toBe(404);
  await client.close();
});

test("a session idle on one instance but used on the other is not ended by the first one's sweep", async () => {
  const { client, transport } = await alternating(); // initialize on a, then b, a, …
  await client.callTool({ name: "m__echo", arguments: { message: "both" } });
  await client.callTool({ name: "m__echo", arguments: { message: "both" } });
  const sessionId = transport.sessionId!;
  const { ended } = member.sessions;

  // 20 minutes on, then used on b alone for 15 more: a's copy is 35 minutes idle, the session is not.
  a.clock.advance(20 * 60_000);
  expect((await listWith(b, token, sessionId)).status).toBe(200);
  a.clock.advance(15 * 60_000);
  // a sweeps when a session opens there: it lets go of its copy, and ends nothing.
  const other = await alternating();
  expect(member.sessions.ended).toBe(ended);
  // Both go on serving the session, a from the store again.
  expect((await listWith(a, token, sessionId)).status).toBe(200);
  expect((await listWith(b, token, sessionId)).status).toBe(200);
  await other.client.close();
  await client.close();
});

test("a virtual server deleted on one instance: the other ends its session there too, GET stream and upstream session", async () => {
  const carol = await a.user("carol");
  const connectorId = await connectedConnector(carol.api, member.url);
  const created = await carol.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Deleted elsewhere", members: [{ connector_id: connectorId, prefix: "m" }] },
  });
  const url = created.body.mcp_url as string;
  // The session on a alone: its upstream session opened there, its GET stream held there.
  const onA = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${carol.token}`);
    return a.fetch(request);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: (input, init) =>
      new Request(input, init).method === "GET" ? Promise.resolve(new Response(null, { status: 405 })) : onA(input, init),
  });
  const client = new Client({ name: "replicas", version: "1.0.0" });
  await client.connect(transport);
  expect(toolText(await client.callTool({ name: "m__echo", arguments: { message: "here" } }))).toBe("member: here");
  const stream = await onA(
    new Request(url, { headers: { accept: "text/event-stream", "mcp-session-id": transport.sessionId! } }),
  );
  expect(stream.status).toBe(200);
  const events = sseReader(stream);
  expect((await events.next()).comment).toBe("connected");
  const { ended } = member.sessions;

  expect((await b.apiOf({ token: carol.token })("DELETE", `/api/v1/virtual-servers/${created.body.id}`)).status).toBe(204);
  // Nothing of it comes to a to tell it: a's scheduler finds the session gone from the store (before, a's copy held
  // its GET stream and upstream session open until it idled out, 30 minutes on).
  await a.runJobs();
  await expect(events.next()).rejects.toThrow("the stream ended");
  await waitFor("the upstream session's DELETE", () => member.sessions.ended === ended + 1, 5_000);
  await client.close();
});
