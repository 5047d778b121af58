import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeJwt } from "jose";
import { authorizeInBrowser, startOidcProvider, type OidcPeer } from "../peers/oidc";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { mcpClient } from "../support/mcp";
import { storedGrant } from "../support/oauth";
import { finishCallback } from "../support/callback";
import { expectProblem } from "../support/api";
import { sql } from "drizzle-orm";
import { queryRows } from "../support/store";
import { createOAuthRepository } from "../../src/oauth-client/repository";

// Real peers, no mocks of OAuth: oidc-provider as the authorization server, an MCP server checking its JWTs.
// The service's clock is stepped, so "an hour later" takes no time; the scheduler's jobs run when the test says. The
// service reaches the peers over real sockets; the API, the proxy and the callback are reached through `app.handle`.
let op: OidcPeer;
let server: OAuthMcpServer;
let t: TestApp;
const clock = steppedClock(Date.now());
const HOUR = 3_600_000;

beforeAll(async () => {
  op = await startOidcProvider({ accessTokenTtl: 3600 });
  server = startOAuthMcpServer(op.issuer);
  t = await createTestApp({ clock, realNetwork: true });
});
afterAll(async () => {
  await t.close();
  await server.stop();
  await op.stop();
});

/** create → connect (auth_required) → the user approves in the browser → callback. Returns the connector id. */
async function authorize(options: { redirect_url?: string } = {}) {
  const created = await t.api("POST", "/api/v1/connectors", { body: { url: server.url } });
  const connect = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: options });
  expect(connect.status).toBe(200);
  expect(connect.body.state).toBe("auth_required");
  const callback = await authorizeInBrowser(connect.body.auth_request.authorization_url, op.issuer);
  const landed = await finishCallback(t, callback, t.admin.basic);
  return { id: created.body.id as string, connect, callback, landed };
}

const proxyUrl = (id: string) => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;

const whoami = async (id: string) => {
  const { client, close } = await mcpClient(proxyUrl(id), { token: t.admin.token }, t.handle);
  const result = await client.callTool({ name: "whoami", arguments: {} });
  await close();
  return JSON.parse((result.content as { text: string }[])[0]!.text) as { sub: string; aud: string; scope: string; jti: string };
};

/** The client id the service registered at the provider for this connector's grant. */
const clientIdOf = async (connectorId: string) =>
  (await createOAuthRepository(t.deps.store).findGrant(connectorId))!.context.client_id;

const connector = async (id: string) => (await t.api("GET", `/api/v1/connectors/${id}`)).body;

describe("the authorization code flow against oidc-provider", () => {
  test("connect asks for authorization with PKCE S256, the resource and the discovered scope", async () => {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: server.url } });
    const res = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expect(res.body).toMatchObject({ state: "auth_required", auth_request: { type: "code" } });
    const url = new URL(res.body.auth_request.authorization_url);
    expect(url.origin).toBe(op.issuer);
    expect(url.searchParams.get("response_type")).toBe("code");
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get("resource")).toBe(server.url);
    expect(url.searchParams.get("scope")!.split(" ").sort()).toEqual(["mcp:tools", "offline_access"]);
    expect(url.searchParams.get("redirect_uri")).toBe(`${t.publicUrl}/api/v1/connectors/oauth/callback`);
    expect(url.searchParams.get("state")!.length).toBeGreaterThanOrEqual(32);
  });

  test("approve → connected → tools through the proxy with a token for this server → refreshed before it expires, and the new token used", async () => {
    const { id, landed } = await authorize();
    expect(landed.status).toBe(200);
    expect(landed.text).toContain("Connected");
    expect(await connector(id)).toMatchObject({ state: "connected", auth_request: null, disconnect_reason: null });

    const first = (await storedGrant(t, id))!;
    expect(first.refresh_token).toBeString();
    const me = await whoami(id);
    // RFC 8707: the token's audience is this MCP server.
    expect(me.aud).toBe(server.url);
    expect(me.scope.split(" ")).toContain("mcp:tools");
    expect(me.jti).toBe(decodeJwt(first.access_token).jti as string);

    // Not yet due: a tick before 80 % of the hour refreshes nothing.
    clock.advance(0.7 * HOUR);
    await t.runJobs();
    expect((await storedGrant(t, id))!.access_token).toBe(first.access_token);
    // Due (80 % of the lifetime): the tick refreshes; oidc-provider rotates the refresh token.
    clock.advance(0.11 * HOUR);
    await t.runJobs();
    const refreshed = (await storedGrant(t, id))!;
    expect(refreshed.access_token).not.toBe(first.access_token);
    expect(refreshed.refresh_token).not.toBe(first.refresh_token);
    expect(refreshed.expires_at!).toBeGreaterThan(first.expires_at!);
    const after = await whoami(id);
    expect(after.sub).toBe(me.sub);
    expect(after.jti).toBe(decodeJwt(refreshed.access_token).jti as string);
  });

  test("a refresh token revoked at the authorization server: the next refresh gets invalid_grant and the connector says so", async () => {
    const { id } = await authorize();
    const current = (await storedGrant(t, id))!;
    const revoke = await fetch(`${op.issuer}/token/revocation`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        token: current.refresh_token!,
        token_type_hint: "refresh_token",
        client_id: await clientIdOf(id),
      }),
    });
    expect(revoke.status).toBe(200);
    clock.advance(0.81 * HOUR);
    await t.runJobs();
    const after = await connector(id);
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("refresh failed");
    expect(after.disconnect_reason).toContain("invalid_grant");
    expect(await storedGrant(t, id)).toBeUndefined();
    expectProblem(await t.api("POST", `/api/v1/connectors/${id}/mcp`, { body: {} }), 409);
  });

  test("a rejected token is refreshed once and the request replayed, invisibly to the client", async () => {
    const { id } = await authorize();
    const before = (await storedGrant(t, id))!;
    const [rejectedBefore, refreshesBefore] = [server.rejected.count, op.refreshed.count];
    server.rejectTokensSeenSoFar();
    const me = await whoami(id);
    expect(me.aud).toBe(server.url);
    // The server did refuse the old token, and the client never saw it: the proxy refreshed once and replayed.
    expect(server.rejected.count).toBeGreaterThan(rejectedBefore);
    expect(op.refreshed.count).toBe(refreshesBefore + 1);
    const after = (await storedGrant(t, id))!;
    expect(after.access_token).not.toBe(before.access_token);
    expect(me.jti).toBe(decodeJwt(after.access_token).jti as string);
  });

  test("concurrent requests share one refresh (a second use of a rotated refresh token would revoke the grant)", async () => {
    const { id } = await authorize();
    const [rejectedBefore, refreshesBefore] = [server.rejected.count, op.refreshed.count];
    server.rejectTokensSeenSoFar();
    const results = await Promise.all([whoami(id), whoami(id), whoami(id), whoami(id)]);
    expect(server.rejected.count).toBeGreaterThanOrEqual(rejectedBefore + 2);
    expect(op.refreshed.count).toBe(refreshesBefore + 1);
    // Every request went out again with the one new token.
    expect(new Set(results.map((r) => r.jti)).size).toBe(1);
    expect((await connector(id)).state).toBe("connected");
  });

  test("disconnect revokes the grant at the authorization server (RFC 7009) before forgetting it", async () => {
    const { id } = await authorize();
    const { refresh_token } = (await storedGrant(t, id))!;
    const clientId = await clientIdOf(id);
    const destroyedBefore = op.destroyed.refreshTokens;
    const off = await t.api("POST", `/api/v1/connectors/${id}/disconnect`);
    expect(off.body).toMatchObject({ state: "disconnected" });
    // oidc-provider destroyed the refresh token on the revocation request (its JWT access tokens cannot be revoked).
    expect(op.destroyed.refreshTokens).toBe(destroyedBefore + 1);
    expect(await storedGrant(t, id)).toBeUndefined();
    const attempt = await fetch(`${op.issuer}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refresh_token!, client_id: clientId }),
    });
    expect(attempt.status).toBe(400);
    expect((await attempt.json()).error).toBe("invalid_grant");
  });

  test("the client registered at an authorization server is reused for its next connector", async () => {
    const first = await authorize();
    const second = await authorize();
    expect(await clientIdOf(second.id)).toBe(await clientIdOf(first.id));
    const clients = await queryRows(t.deps, sql`SELECT issuer FROM oauth_clients`);
    expect(clients).toEqual([{ issuer: op.issuer }]);
  });

  test("403 insufficient_scope: the connector waits for re-authorization with the wider scope, and says so", async () => {
    const { id } = await authorize();
    const { client, close } = await mcpClient(proxyUrl(id), { token: t.admin.token }, t.handle);
    await expect(client.callTool({ name: "admin-report", arguments: {} })).rejects.toThrow(/403|scope/);
    await close();
    const pending = await connector(id);
    expect(pending.state).toBe("auth_required");
    expect(pending.disconnect_reason).toContain("wider scope");
    const scope = new URL(pending.auth_request.authorization_url).searchParams.get("scope")!.split(" ");
    expect(scope).toContain("mcp:admin");
    expect(scope).toContain("mcp:tools");
    // Approving the wider scope connects it again, and the tool works.
    const callback = await authorizeInBrowser(pending.auth_request.authorization_url, op.issuer);
    expect((await finishCallback(t, callback, t.admin.basic)).status).toBe(200);
    const again = await mcpClient(proxyUrl(id), { token: t.admin.token }, t.handle);
    const report = await again.client.callTool({ name: "admin-report", arguments: {} });
    expect(JSON.stringify(report)).toContain("admin ok");
    await again.close();
  });
});
