import { afterAll, beforeAll, expect, test } from "bun:test";
import { startSdkOAuthExample } from "../peers/sdk-oauth-example";
import type { Peer } from "../peers/everything";
import { createTestApp, type TestApp } from "../support/app";
import { mcpClient } from "../support/mcp";
import { finishCallback } from "../support/callback";

// A second, independent authorization server: the one in the MCP TypeScript SDK's examples. The service reaches it
// over real sockets; the API, the callback and the proxy are reached through `app.handle`.
let example: Peer & { authUrl: string };
let t: TestApp;
beforeAll(async () => {
  [example, t] = await Promise.all([startSdkOAuthExample(), createTestApp({ realNetwork: true })]);
});
afterAll(async () => {
  await t.close();
  await example.stop();
});

test("connects through the SDK example's OAuth (--oauth-strict) and calls a tool through the proxy", async () => {
  const created = await t.api("POST", "/api/v1/connectors", { body: { url: example.url } });
  const connect = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
  expect(connect.body.state).toBe("auth_required");
  const authorization = new URL(connect.body.auth_request.authorization_url);
  expect(authorization.origin).toBe(example.authUrl);
  expect(authorization.searchParams.get("resource")).toBe(example.url);

  // Its /authorize approves at once: follow the redirects to the service's callback.
  let next = authorization.href;
  for (let hop = 0; hop < 5 && !next.startsWith(t.publicUrl); hop++) {
    const res = await fetch(next, { redirect: "manual" });
    next = new URL(res.headers.get("location")!, next).href;
  }
  expect(next).toStartWith(`${t.publicUrl}/api/v1/connectors/oauth/callback`);
  const landed = await finishCallback(t, next, t.admin.basic);
  expect(landed.status).toBe(200);
  expect((await t.api("GET", `/api/v1/connectors/${created.body.id}`)).body.state).toBe("connected");

  const proxyUrl = `${t.publicUrl}/api/v1/connectors/${created.body.id}/mcp`;
  const { client, close } = await mcpClient(proxyUrl, { token: t.admin.token }, t.handle);
  const result = await client.callTool({ name: "greet", arguments: { name: "proxy" } });
  expect(JSON.stringify(result)).toContain("proxy");
  await close();
});
