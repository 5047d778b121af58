import { afterAll, beforeAll, expect, test } from "bun:test";
import { startSessionAuthServer } from "../peers/session-auth-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient } from "../support/mcp";

// A client (the Vercel AI SDK's) opens its GET stream before `initialize`; a fastmcp server answers
// that GET 401 "No valid session ID" whatever the credentials. That one 401 must not disconnect a working connector:
// the service checks the stored headers with a fresh handshake and disconnects only when that is refused. The service
// reaches the server over a real socket; the client reaches the service through `app.handle`. The service's clock is
// stepped past the 30 s a proof of the credentials stands for.
const KEY = "sk-session-auth-0123456789";
let t: TestApp;
let peer: Awaited<ReturnType<typeof startSessionAuthServer>>;
let id: string;
let proxyUrl: string;

beforeAll(async () => {
  [t, peer] = await Promise.all([createTestApp({ realNetwork: true }), startSessionAuthServer(KEY)]);
  id = await connectedConnector(t.api, peer.url, { "x-api-key": KEY });
  proxyUrl = `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
}, 30_000);
afterAll(async () => {
  await t?.close();
  await peer?.stop();
});

/** A GET stream with no session yet, as the AI SDK's client opens it (with an API token). */
const earlyStream = () =>
  t.handle(new Request(proxyUrl, { headers: { authorization: `Bearer ${t.admin.token}`, accept: "text/event-stream" } }));
const state = async () => (await t.api("GET", `/api/v1/connectors/${id}`)).body;

test("a 401 to a stream opened before initialize reaches the client as the server sent it; the connector stays connected", async () => {
  t.clock.advance(60_000);
  const sessions = peer.state.sessions;
  const res = await earlyStream();
  expect(res.status).toBe(401);
  expect(await res.json()).toMatchObject({ error: { message: "Unauthorized: No valid session ID provided" } });
  // The challenge is this service's (the upstream's is about the connector's key, which the service holds).
  expect(res.headers.get("www-authenticate")).toStartWith(
    `Bearer resource_metadata="${t.publicUrl}/.well-known/oauth-protected-resource/`,
  );
  expect((await state()).state).toBe("connected");
  // The check was a fresh handshake with the stored key: one session at the server.
  expect(peer.state.sessions).toBe(sessions + 1);
  // Proven a moment ago: the next stray 401 is relayed without another handshake.
  expect((await earlyStream()).status).toBe(401);
  expect(peer.state.sessions).toBe(sessions + 1);
  // And the connector works.
  const { client, close } = await mcpClient(proxyUrl, { token: t.admin.token }, t.handle);
  expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["echo"]);
  await close();
});

test("a burst of 100 such 401s makes one handshake", async () => {
  t.clock.advance(60_000);
  const sessions = peer.state.sessions;
  const answers = await Promise.all(Array.from({ length: 100 }, earlyStream));
  expect(answers.map((res) => res.status)).toEqual(Array(100).fill(401));
  await Promise.all(answers.map((res) => res.body?.cancel()));
  expect(peer.state.sessions).toBe(sessions + 1);
  expect((await state()).state).toBe("connected");
});

test("a key the server no longer takes: the fresh handshake is refused, the connector disconnected with what the server said", async () => {
  peer.state.key = "sk-the-new-one-9876543210";
  try {
    t.clock.advance(60_000);
    const res = await earlyStream();
    expect(res.status).toBe(502);
    expect((await res.json()).type).toBe("/problems/upstream-credentials-revoked");
    const after = await state();
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("HTTP 401");
    expect(after.disconnect_reason).toContain("Unauthorized: unknown API key [redacted]");
    expect(after.disconnect_reason).not.toContain(KEY);
  } finally {
    peer.state.key = KEY;
  }
});
