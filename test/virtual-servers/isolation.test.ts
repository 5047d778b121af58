import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, toolText } from "../support/mcp";

// Client sessions of a virtual server (docs/interface.md §9.4) stay apart — two sessions of one user, and another
// user — and the places each member call holds at the proxy are given back (PROXY__MAX_STREAMS_PER_USER=4 here).
let t: TestApp;
const member = await startLabelledServer("m");

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true, env: { PROXY__MAX_STREAMS_PER_USER: "4" } });
});
afterAll(async () => {
  await t.close();
  await member.stop();
});

const clientOf = async (token: string, url: string) => {
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${token}`);
    return t.fetch(request);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchFn });
  const mcp = new Client({ name: "isolation-test", version: "1.0.0" });
  await mcp.connect(transport);
  return { mcp, transport };
};

test("two sessions of one user hold an upstream session each; another user cannot use either", async () => {
  const alice = await t.user("alice");
  const bob = await t.user("bob");
  const id = await connectedConnector(alice.api, member.url);
  const created = await alice.api("POST", "/api/v1/virtual-servers", {
    body: { name: "One", members: [{ connector_id: id, prefix: "m" }] },
  });
  const url = created.body.mcp_url as string;
  const started = member.sessions.started;
  const first = await clientOf(alice.token, url);
  const second = await clientOf(alice.token, url);
  for (const { mcp } of [first, second]) await mcp.callTool({ name: "m__echo", arguments: { message: "x" } });
  expect(member.sessions.started).toBe(started + 2);

  // Bob with Alice's session id: her virtual server is not his (404), whatever the session.
  const res = await t.fetch(
    new Request(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${bob.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": first.transport.sessionId!,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }),
  );
  expect(res.status).toBe(404);

  // Many more calls than places: each member exchange gives its place back.
  for (let i = 0; i < 30; i++)
    expect(toolText(await first.mcp.callTool({ name: "m__echo", arguments: { message: `${i}` } }))).toBe(`m: ${i}`);
  await first.mcp.listTools();
  await first.transport.terminateSession();
  await second.transport.terminateSession();
  await first.mcp.close();
  await second.mcp.close();
});
