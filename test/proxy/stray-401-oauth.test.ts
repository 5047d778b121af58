import { afterAll, beforeAll, expect, test } from "bun:test";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { createTestApp, type TestApp } from "../support/app";
import { finishCallback } from "../support/callback";

// A stray 401 for an OAuth connector, through app.handle: its server answers a GET stream opened before
// `initialize` 401 whatever the token (as fastmcp does). The proxy refreshes once and replays, as for any 401; the
// replay's 401 is then checked with a fresh handshake, which the new token passes: the client gets the 401, the
// connector stays connected, and further stray 401s cost no refresh while that check stands.
const oauth = scriptedOAuth();
let t: TestApp;
let id: string;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve(oauth.as, oauth.authorizationServer);
  t.network.serve(oauth.mcp, (request) =>
    request.method === "GET" && new URL(request.url).pathname === "/mcp" && !request.headers.has("mcp-session-id")
      ? Response.json(
          { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Unauthorized: No valid session ID provided" } },
          { status: 401 },
        )
      : oauth.mcpServer(request),
  );
  id = (await t.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } })).body.id;
  const connect = await t.api("POST", `/api/v1/connectors/${id}/connect`);
  await finishCallback(t, oauth.approve(connect.body.auth_request.authorization_url), t.admin.basic);
  expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
});
afterAll(() => t.close());

const earlyStream = () =>
  t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
      headers: { authorization: `Bearer ${t.admin.token}`, accept: "text/event-stream" },
    }),
  );
const refreshes = () => oauth.seen.tokenRequests.filter((form) => form.get("grant_type") === "refresh_token").length;

test("a stray 401 after the refresh is relayed, the connector stays connected; the next ones cost no refresh", async () => {
  const before = refreshes();
  const res = await earlyStream();
  expect(res.status).toBe(401);
  expect((await res.json()).error.message).toBe("Unauthorized: No valid session ID provided");
  expect((await t.api("GET", `/api/v1/connectors/${id}`)).body).toMatchObject({ state: "connected", disconnect_reason: null });
  expect(refreshes()).toBe(before + 1);
  for (let i = 0; i < 5; i++) expect((await earlyStream()).status).toBe(401);
  expect(refreshes()).toBe(before + 1);
});

test("a token the server no longer takes, and a refresh it refuses: disconnected with the reason", async () => {
  t.clock.advance(60_000);
  oauth.expireAccessTokens();
  oauth.state.tokenError = "invalid_grant";
  try {
    const res = await earlyStream();
    expect(res.status).toBe(502);
    expect((await res.json()).type).toBe("/problems/upstream-credentials-revoked");
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("disconnected");
  } finally {
    oauth.state.tokenError = undefined;
  }
});
