import { afterAll, beforeAll, expect, test } from "bun:test";
import { startSdkOAuthExample } from "../peers/sdk-oauth-example";
import type { Peer } from "../peers/everything";
import { mcpClient, proxyUrl } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { finishCallback } from "../support/callback";

// A second, independent authorization server: the one in the MCP TypeScript SDK's examples.
let example: Peer & { authUrl: string };
let service: TestService;
beforeAll(async () => {
  example = await startSdkOAuthExample();
  service = await startTestService();
});
afterAll(async () => {
  await service.stop();
  await example.stop();
});

test("connects through the SDK example's OAuth (--oauth-strict) and calls a tool through the proxy", async () => {
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: example.url } });
  const connect = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
  expect(connect.body.state).toBe("auth_required");
  const authorization = new URL(connect.body.auth_request.authorization_url);
  expect(authorization.origin).toBe(example.authUrl);
  expect(authorization.searchParams.get("resource")).toBe(example.url);

  // Its /authorize approves at once: follow the redirects to the service's callback.
  let next = authorization.href;
  for (let hop = 0; hop < 5 && !next.startsWith(service.url); hop++) {
    const res = await fetch(next, { redirect: "manual" });
    next = new URL(res.headers.get("location")!, next).href;
  }
  expect(next).toStartWith(`${service.url}/api/v1/connectors/oauth/callback`);
  const landed = await finishCallback((request) => fetch(request), next, ADMIN);
  expect(landed.status).toBe(200);
  expect((await service.api("GET", `/api/v1/connectors/${created.body.id}`)).body.state).toBe("connected");

  const { client, close } = await mcpClient(proxyUrl(service, created.body.id));
  const result = await client.callTool({ name: "greet", arguments: { name: "proxy" } });
  expect(JSON.stringify(result)).toContain("proxy");
  await close();
});
