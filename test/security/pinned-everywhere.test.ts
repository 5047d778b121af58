import { afterAll, beforeAll, expect, test } from "bun:test";
import { isIP } from "node:net";
import { a2aAgent } from "../peers/a2a-agent";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { mcpClient, toolText } from "../support/mcp";
import { finishCallback } from "../support/callback";
import { waitFor } from "../support/wait";

// Every way the service reaches out goes through the pinning fetch (security/guarded-fetch.ts): the fake network
// sees each request addressed to the IP address the guard checked, never to a name that fetch would resolve by itself
// (the rebinding attack itself is played for real in rebinding.test.ts). A path that called fetch with the name would
// show up here as a request connected to a name.
const oauth = scriptedOAuth();
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({
    clock: steppedClock(Date.now()),
    env: { WEBHOOKS__URLS: "https://hooks.example/in", WEBHOOKS__SECRET: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
  });
  t.network.serve(oauth.as, oauth.authorizationServer);
  t.network.serve(oauth.mcp, oauth.mcpServer);
  t.network.serve("https://hooks.example", () => new Response(null, { status: 204 }));
  const agent = a2aAgent("https://agent.example");
  t.network.serve("https://agent.example", agent.handler);
  t.network.serve("https://docs.example", (request) =>
    Response.json({ client_id: request.url, client_name: "Pinned", redirect_uris: ["https://app.example/cb"] }),
  );
});
afterAll(async () => {
  t.services.events.webhooks?.stop();
  await t.close();
});

test("OAuth discovery, registration, token, refresh and revocation, the proxy, agent cards, webhooks and metadata documents connect to checked addresses", async () => {
  // OAuth: discovery, registration, authorization, token.
  const created = await t.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } });
  const id = created.body.id as string;
  const connect = await t.api("POST", `/api/v1/connectors/${id}/connect`);
  expect(connect.body.state).toBe("auth_required");
  expect((await finishCallback(t, oauth.approve(connect.body.auth_request.authorization_url), t.admin.basic)).status).toBe(200);
  // The proxy, then a refresh after the server forgot the access token.
  const call = async () => {
    const { client, close } = await mcpClient(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, { token: t.admin.token }, t.handle);
    const text = toolText(await client.callTool({ name: "whoami", arguments: {} }));
    await close();
    return text;
  };
  expect(await call()).toStartWith("at-");
  oauth.expireAccessTokens();
  expect(await call()).toStartWith("at-");
  // Revocation, when the connector goes.
  expect((await t.api("DELETE", `/api/v1/connectors/${id}`)).status).toBeOneOf([202, 204]);
  await waitFor("the revocation", () => oauth.seen.revoked.length > 0);
  // An agent card.
  expect(
    (await t.api("POST", "/api/v1/providers", { body: { agent_card_url: "https://agent.example/.well-known/agent-card.json" } }))
      .status,
  ).toBe(201);
  // A Client ID Metadata Document, opened by anyone.
  const authorize = new URL(`${t.publicUrl}/oauth/authorize`);
  authorize.search = new URLSearchParams({
    response_type: "code",
    client_id: "https://docs.example/client.json",
    redirect_uri: "https://app.example/cb",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
    state: "s",
  }).toString();
  await t.handle(new Request(authorize));
  // Webhooks (the events above).
  await t.services.events.webhooks!.deliver();

  const reached = new Set(t.network.requests.map((r) => new URL(r.url).hostname));
  expect([...reached].sort()).toEqual(["agent.example", "as.example", "docs.example", "hooks.example", "mcp.example"]);
  const byName = t.network.requests.filter((r) => !isIP(r.connectedTo));
  expect(byName).toEqual([]);
});
