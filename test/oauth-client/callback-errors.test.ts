import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authorizeInBrowser, startOidcProvider, type OidcPeer } from "../peers/oidc";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { createTestApp, type TestApp } from "../support/app";
import { mcpClient, proxyUrl } from "../support/mcp";
import { storedGrant } from "../support/oauth";
import { ADMIN, startTestService } from "../support/service";
import { finishCallback } from "../support/callback";

// The callback against oidc-provider, a real authorization server (the fast variants: authorization.test.ts). The
// service reaches it over a real socket; the API and the callback are reached through `app.handle`, except in the
// last test, which reads the request log of the real server.
let op: OidcPeer;
let server: OAuthMcpServer;
let t: TestApp;
const APP = "http://127.0.0.1:5999";

beforeAll(async () => {
  op = await startOidcProvider();
  server = startOAuthMcpServer(op.issuer);
  t = await createTestApp({ env: { OAUTH__ALLOWED_REDIRECT_ORIGINS: APP }, realNetwork: true });
});
afterAll(async () => {
  await t.close();
  await server.stop();
  await op.stop();
});

async function pending(body: Record<string, unknown> = {}) {
  const created = await t.api("POST", "/api/v1/connectors", { body: { url: server.url } });
  const connect = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body });
  expect(connect.body.state).toBe("auth_required");
  return { id: created.body.id as string, url: connect.body.auth_request.authorization_url as string };
}

test("access denied without redirect_url: an HTML page with the error; the connector says why", async () => {
  const { id, url } = await pending();
  const callback = await authorizeInBrowser(url, op.issuer, { deny: true });
  const res = await finishCallback(t, callback, t.admin.basic);
  expect(res.status).toBe(400);
  expect(res.headers.get("content-type")).toStartWith("text/html");
  const html = res.text;
  expect(html).toContain("access_denied");
  const connector = (await t.api("GET", `/api/v1/connectors/${id}`)).body;
  expect(connector.state).toBe("disconnected");
  expect(connector.disconnect_reason).toContain("access_denied");
});

test("access denied with redirect_url: redirected there with error and error_description", async () => {
  const { url } = await pending({ redirect_url: `${APP}/done?from=cs` });
  const callback = await authorizeInBrowser(url, op.issuer, { deny: true });
  const res = await finishCallback(t, callback, t.admin.basic);
  expect(res.status).toBe(303);
  const target = new URL(res.headers.get("location")!);
  expect(target.origin + target.pathname).toBe(`${APP}/done`);
  expect(target.searchParams.get("from")).toBe("cs");
  expect(target.searchParams.get("error")).toBe("access_denied");
  expect(target.searchParams.get("error_description")).toBeTruthy();
});

test("success with redirect_url: redirected there", async () => {
  const { id, url } = await pending({ redirect_url: `${APP}/done` });
  const res = await finishCallback(t, await authorizeInBrowser(url, op.issuer), t.admin.basic);
  expect(res.status).toBe(303);
  expect(res.headers.get("location")).toBe(`${APP}/done`);
  expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
});

test("a replayed callback (same state and code) is an error page, not a 500, and the grant stays", async () => {
  const { id, url } = await pending();
  const callback = await authorizeInBrowser(url, op.issuer);
  expect((await finishCallback(t, callback, t.admin.basic)).status).toBe(200);
  const replay = await finishCallback(t, callback, t.admin.basic);
  expect(replay.status).toBe(400);
  expect(replay.text).toContain("already used or has expired");
  expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
});

test("tokens are sealed at rest; no code, state or token reaches the log", async () => {
  // A service of its own, on a database file, stopped at the end so that every byte it wrote is on disk.
  const dir = mkdtempSync(join(tmpdir(), "cs-oauth-"));
  const service = await startTestService({ DATABASE__PATH: join(dir, "cs.db") });
  const pending = async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: server.url } });
    const connect = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    return { id: created.body.id as string, url: connect.body.auth_request.authorization_url as string };
  };
  const { id, url } = await pending();
  const callback = await authorizeInBrowser(url, op.issuer);
  await finishCallback((request) => fetch(request), callback, ADMIN);
  const grant = (await storedGrant(service, id))!;
  const { client, close } = await mcpClient(proxyUrl(service, id));
  await client.callTool({ name: "whoami", arguments: {} });
  await close();
  const pendingState = await pending();
  await service.stop();

  const bytes = readdirSync(dir)
    .filter((f) => f.startsWith("cs.db"))
    .map((f) => readFileSync(join(dir, f)).toString("latin1"))
    .join("");
  expect(bytes.includes(op.issuer)).toBe(true);
  // (Boolean checks: a failed toContain would print the whole database file.)
  for (const secret of [grant.access_token, grant.refresh_token!]) expect(bytes.includes(secret)).toBe(false);
  const code = new URL(callback).searchParams.get("code")!;
  // The state is part of the authorization URL the API shows the user, so it is not a secret at rest; it is never logged.
  const state = new URL(pendingState.url).searchParams.get("state")!;

  const logs = service.logs.join("\n");
  expect(logs).toContain("/api/v1/connectors/oauth/callback");
  for (const secret of [grant.access_token, grant.refresh_token!, code, state]) expect(logs).not.toContain(secret);
  rmSync(dir, { recursive: true, force: true });
});
