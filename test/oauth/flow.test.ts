import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { authorizeInBrowser, startOidcProvider, type OidcPeer } from "../peers/oidc";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { mcpClient, proxyUrl } from "../support/mcp";
import { storedGrant, waitFor } from "../support/oauth";
import { expectProblem, startTestService, type TestService } from "../support/service";

// Real peers, no mocks of OAuth: oidc-provider as the authorization server, an MCP server checking its JWTs.
let op: OidcPeer;
let server: OAuthMcpServer;
let service: TestService;

beforeAll(async () => {
  op = await startOidcProvider({ accessTokenTtl: 4 });
  server = startOAuthMcpServer(op.issuer);
  service = await startTestService({ SCHEDULER__INTERVAL_SECONDS: "0.3" });
});
afterAll(async () => {
  await service.stop();
  await server.stop();
  await op.stop();
});

/** create → connect (auth_required) → the user approves in the browser → callback. Returns the connector id. */
async function authorize(options: { redirect_url?: string } = {}) {
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: server.url } });
  const connect = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: options });
  expect(connect.status).toBe(200);
  expect(connect.body.state).toBe("auth_required");
  const callback = await authorizeInBrowser(connect.body.auth_request.authorization_url, op.issuer);
  const landed = await fetch(callback, { redirect: "manual" });
  return { id: created.body.id as string, connect, callback, landed };
}

const whoami = async (id: string) => {
  const { client, close } = await mcpClient(proxyUrl(service, id));
  const result = await client.callTool({ name: "whoami", arguments: {} });
  await close();
  return JSON.parse((result.content as { text: string }[])[0]!.text) as { sub: string; aud: string; scope: string };
};

describe("the authorization code flow against oidc-provider", () => {
  test("connect asks for authorization with PKCE S256, the resource and the discovered scope", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: server.url } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expect(res.body).toMatchObject({ state: "auth_required", auth_request: { type: "code" } });
    const url = new URL(res.body.auth_request.authorization_url);
    expect(url.origin).toBe(op.issuer);
    expect(url.searchParams.get("response_type")).toBe("code");
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get("resource")).toBe(server.url);
    expect(url.searchParams.get("scope")!.split(" ").sort()).toEqual(["mcp:tools", "offline_access"]);
    expect(url.searchParams.get("redirect_uri")).toBe(`${service.url}/api/v1/connectors/oauth/callback`);
    expect(url.searchParams.get("state")!.length).toBeGreaterThanOrEqual(32);
  });

  test("approve → connected → tools through the proxy with a token for this server → refreshed before it expires → revoked: disconnected with a reason", async () => {
    const { id, landed } = await authorize();
    expect(landed.status).toBe(200);
    expect(await landed.text()).toContain("Connected");
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body).toMatchObject({ state: "connected", auth_request: null, disconnect_reason: null });

    const first = storedGrant(service, id)!;
    expect(first.refresh_token).toBeString();
    const me = await whoami(id);
    // RFC 8707: the token's audience is this MCP server.
    expect(me.aud).toBe(server.url);
    expect(me.scope.split(" ")).toContain("mcp:tools");

    // 4 s tokens: the scheduler refreshes at half-life, before expiry; oidc-provider rotates the refresh token.
    const refreshed = await waitFor("a refresh", () => {
      const now = storedGrant(service, id)!;
      return now.access_token !== first.access_token && now;
    }, 15_000);
    expect(refreshed.refresh_token).not.toBe(first.refresh_token);
    expect(refreshed.expires_at!).toBeGreaterThan(first.expires_at!);
    await Bun.sleep(4_500); // past the first token's lifetime
    expect((await whoami(id)).sub).toBe(me.sub);

    // Revoke at the provider (RFC 7009): the grant goes, the next refresh gets invalid_grant.
    const current = storedGrant(service, id)!;
    const revoke = await fetch(`${op.issuer}/token/revocation`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: current.refresh_token!, token_type_hint: "refresh_token", client_id: clientIdOf(id) }),
    });
    expect(revoke.status).toBe(200);
    const after = await waitFor("the disconnect", async () => {
      const c = (await service.api("GET", `/api/v1/connectors/${id}`)).body;
      return c.state === "disconnected" && c;
    }, 15_000);
    expect(after.disconnect_reason).toContain("refresh failed");
    expect(after.disconnect_reason).toContain("invalid_grant");
    expect(storedGrant(service, id)).toBeUndefined();
    expectProblem(await service.api("POST", `/api/v1/connectors/${id}/mcp`, { body: {} }), 409);
  }, 60_000);

  test("a rejected token is refreshed once and the request replayed, invisibly to the client", async () => {
    const { id } = await authorize();
    const before = storedGrant(service, id)!;
    // The server stops accepting every token issued so far.
    const rejectedBefore = server.rejected.count;
    server.rejectTokensIssuedBefore(Math.floor(Date.now() / 1000) + 1);
    await Bun.sleep(1_100);
    expect((await whoami(id)).aud).toBe(server.url);
    // The server did refuse a request, and the client never saw it: the proxy refreshed and replayed.
    expect(server.rejected.count).toBeGreaterThan(rejectedBefore);
    expect(storedGrant(service, id)!.access_token).not.toBe(before.access_token);
    server.rejectTokensIssuedBefore(0);
  }, 30_000);

  test("concurrent requests share one refresh (a second use of a rotated refresh token would revoke the grant)", async () => {
    const { id } = await authorize();
    const rejectedBefore = server.rejected.count;
    server.rejectTokensIssuedBefore(Math.floor(Date.now() / 1000) + 1);
    await Bun.sleep(1_100);
    const results = await Promise.all([whoami(id), whoami(id), whoami(id), whoami(id)]);
    for (const r of results) expect(r.aud).toBe(server.url);
    expect(server.rejected.count).toBeGreaterThan(rejectedBefore);
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    server.rejectTokensIssuedBefore(0);
  }, 30_000);

  test("disconnect revokes the grant at the authorization server (RFC 7009) before forgetting it", async () => {
    const { id } = await authorize();
    const { refresh_token } = storedGrant(service, id)!;
    const refreshWith = (token: string) =>
      fetch(`${op.issuer}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token, client_id: clientIdOf(id) }),
      });
    const destroyedBefore = op.destroyed.refreshTokens;
    const off = await service.api("POST", `/api/v1/connectors/${id}/disconnect`);
    expect(off.body).toMatchObject({ state: "disconnected" });
    // oidc-provider destroyed the refresh token on the revocation request (its JWT access tokens cannot be revoked).
    expect(op.destroyed.refreshTokens).toBeGreaterThan(destroyedBefore);
    expect(storedGrant(service, id)).toBeUndefined();
    const attempt = await refreshWith(refresh_token!);
    expect(attempt.status).toBe(400);
    expect((await attempt.json()).error).toBe("invalid_grant");
  });

  test("the registered client is reused for the same authorization server", () => {
    const clients = service.deps.db.$client.query("SELECT issuer FROM oauth_clients").all() as { issuer: string }[];
    expect(clients).toEqual([{ issuer: op.issuer }]);
  });

  test("403 insufficient_scope: the connector waits for re-authorization with the wider scope, and says so", async () => {
    const { id } = await authorize();
    const { client, close } = await mcpClient(proxyUrl(service, id));
    await expect(client.callTool({ name: "admin-report", arguments: {} })).rejects.toThrow(/403|scope/);
    await close();
    const connector = (await service.api("GET", `/api/v1/connectors/${id}`)).body;
    expect(connector.state).toBe("auth_required");
    expect(connector.disconnect_reason).toContain("wider scope");
    const scope = new URL(connector.auth_request.authorization_url).searchParams.get("scope")!.split(" ");
    expect(scope).toContain("mcp:admin");
    expect(scope).toContain("mcp:tools");
    // Approving the wider scope connects it again, and the tool works.
    const callback = await authorizeInBrowser(connector.auth_request.authorization_url, op.issuer);
    expect((await fetch(callback, { redirect: "manual" })).status).toBe(200);
    const again = await mcpClient(proxyUrl(service, id));
    const report = await again.client.callTool({ name: "admin-report", arguments: {} });
    expect(JSON.stringify(report)).toContain("admin ok");
    await again.close();
  }, 30_000);
});

function clientIdOf(connectorId: string): string {
  void connectorId;
  return (service.deps.db.$client.query("SELECT client_id FROM oauth_clients").get() as { client_id: string }).client_id;
}
