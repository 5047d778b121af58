import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearerMcp } from "../peers/bearer-server";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { finishCallback } from "../support/callback";
import { storedGrant } from "../support/oauth";
import { connectedConnector } from "../support/mcp";

// PATCH /api/v1/connectors/{id} with `url`, through app.handle: a connector whose URL was wrong is fixed in place.
// The new URL passes the rules of a creation; a different one ends the connection (credentials, grant, pending
// authorization forgotten) and the connector needs a new connect. And the proxy's 409 for a connector waiting for
// OAuth names the link to open.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const oauth = scriptedOAuth();
const keyed = bearerMcp("the-key");

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://open.example", scriptedServer().handler);
  t.network.serve("https://keyed.example", keyed.handler);
  t.network.serve(oauth.as, oauth.authorizationServer);
  t.network.serve(oauth.mcp, oauth.mcpServer);
  alice = await t.user("alice");
});
afterAll(() => t.close());

const patch = (id: string, body: unknown) => alice.api("PATCH", `/api/v1/connectors/${id}`, { body });
const proxyPost = (id: string) =>
  t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${alice.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    }),
  );

describe("PATCH url", () => {
  test("a connected connector moves: disconnected with the reason, headers forgotten; connecting again works there", async () => {
    const id = await connectedConnector(alice.api, "https://keyed.example/mcp", { Authorization: "Bearer the-key" });
    const moved = await patch(id, { url: "https://open.example/mcp", metadata: { name: "Open one" } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({
      url: "https://open.example/mcp",
      state: "disconnected",
      header_names: [],
      metadata: { name: "Open one" },
    });
    expect(moved.body.disconnect_reason).toBe(
      "The URL changed from https://keyed.example/mcp to https://open.example/mcp: connect it again",
    );
    // Nothing is sent to the new URL with the old server's headers: the proxy refuses until a new connect.
    const refused = await proxyPost(id);
    expect(refused.status).toBe(409);
    const connected = await alice.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    expect(connected.body.state).toBe("connected");
    expect((await proxyPost(id)).status).toBe(200);
  });

  test("a never-connected connector stays created; the same URL changes nothing", async () => {
    const created = await alice.api("POST", "/api/v1/connectors", { body: { url: "https://typo.example/mcp" } });
    const fixed = await patch(created.body.id, { url: "https://open.example/mcp" });
    expect(fixed.status).toBe(200);
    expect(fixed.body).toMatchObject({ url: "https://open.example/mcp", state: "created", disconnect_reason: null });
    const id = await connectedConnector(alice.api, "https://open.example/mcp");
    const same = await patch(id, { url: "https://open.example/mcp" });
    expect(same.body).toMatchObject({ state: "connected", disconnect_reason: null });
  });

  test("OAuth client credentials stay only while the origin stays (a client secret never goes to another server)", async () => {
    const created = await alice.api("POST", "/api/v1/connectors", {
      body: { url: "https://keyed.example/mcp", client_id: "my-client", client_secret: "my-secret" },
    });
    const id = created.body.id as string;
    const row = () => t.services.connectors.owned(alice.principal, id);
    await patch(id, { url: "https://keyed.example/v2/mcp" });
    expect((await row()).client_id).toBe("my-client");
    expect((await row()).client_secret).not.toBeNull();
    await patch(id, { url: "https://open.example/mcp" });
    expect((await row()).client_id).toBeNull();
    expect((await row()).client_secret).toBeNull();
  });

  test("the URL rules of a creation hold: 422 problems, nothing changed", async () => {
    const id = await connectedConnector(alice.api, "https://open.example/mcp");
    for (const url of [
      "ftp://files.example/mcp",
      "not a url",
      "https://user:pw@open.example/mcp",
      "https://open.example/mcp#frag",
      "http://169.254.169.254/latest",
      "mcp+stdio://no-such-preset",
      "",
    ]) {
      const refused = await patch(id, { url });
      expectProblem(refused, 422);
    }
    expectProblem(await patch(id, { url: "https://keyed.example/mcp", headers: { Authorization: "Bearer x" } }), 422);
    expectProblem(await patch(id, { url: 42 }), 422);
    const after = await alice.api("GET", `/api/v1/connectors/${id}`);
    expect(after.body).toMatchObject({ url: "https://open.example/mcp", state: "connected" });
    // Another user's connector is not there for them.
    const bob = await t.user("bob-url");
    expectProblem(await bob.api("PATCH", `/api/v1/connectors/${id}`, { body: { url: "https://keyed.example/mcp" } }), 404);
  });

  test("an OAuth connector waiting for approval: the proxy's 409 names the link; moving drops the pending authorization", async () => {
    const created = await alice.api("POST", "/api/v1/connectors", { body: { url: `${oauth.mcp}/mcp` } });
    const id = created.body.id as string;
    const pending = await alice.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    expect(pending.body.state).toBe("auth_required");
    const link = pending.body.auth_request.authorization_url as string;

    // The proxy's 409 says what to do: open the link, not "connect it" (which the person just did).
    const waiting = await proxyPost(id);
    expect(waiting.status).toBe(409);
    const problem = (await waiting.json()) as { type: string; detail: string };
    expect(problem.type).toContain("oauth-authorization-required");
    expect(problem.detail).toBe(`authorization pending: open ${link}`);

    const moved = await patch(id, { url: "https://open.example/mcp" });
    expect(moved.body).toMatchObject({ state: "disconnected", auth_request: null });
    // Finishing the old authorization now is refused: its state was forgotten with the move.
    const state = new URL(link).searchParams.get("state")!;
    const callback = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/oauth/callback?code=whatever&state=${encodeURIComponent(state)}`),
    );
    expect(await callback.text()).toContain("already used or has expired");
    expect((await alice.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("disconnected");
    expect(await storedGrant(t, id)).toBeUndefined();
  });

  test("a connected OAuth connector moves: its grant is revoked at the authorization server and forgotten", async () => {
    const created = await alice.api("POST", "/api/v1/connectors", { body: { url: `${oauth.mcp}/mcp` } });
    const id = created.body.id as string;
    const pending = await alice.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    const back = oauth.approve(pending.body.auth_request.authorization_url);
    expect((await finishCallback(t, back, alice.basic)).status).toBe(200);
    expect((await alice.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    const grant = (await storedGrant(t, id))!;
    const moved = await patch(id, { url: "https://open.example/mcp" });
    expect(moved.body).toMatchObject({ state: "disconnected", url: "https://open.example/mcp" });
    expect(oauth.seen.revoked).toContain(grant.refresh_token!);
    expect(await storedGrant(t, id)).toBeUndefined();
  });

  test("an open server that starts asking for authorization: the proxy's 409 names the link too", async () => {
    const turns = scriptedOAuth({ as: "https://as-turns.example", mcp: "https://turns.example" });
    const open = scriptedServer().handler;
    let current: (request: Request) => Response | Promise<Response> = open;
    t.network.serve(turns.mcp, (request) => current(request));
    t.network.serve(turns.as, turns.authorizationServer);
    const id = await connectedConnector(alice.api, `${turns.mcp}/mcp`);
    current = turns.mcpServer;
    const answer = await proxyPost(id);
    expect(answer.status).toBe(409);
    const problem = (await answer.json()) as { detail: string };
    const connector = await alice.api("GET", `/api/v1/connectors/${id}`);
    expect(connector.body.state).toBe("auth_required");
    expect(problem.detail).toContain(`authorization pending: open ${connector.body.auth_request.authorization_url}`);
    // And so does every request after it, until the person approves.
    expect(((await (await proxyPost(id)).json()) as { detail: string }).detail).toBe(
      `authorization pending: open ${connector.body.auth_request.authorization_url}`,
    );
  });

  test("OpenAPI documents url on PATCH", async () => {
    const doc = (await (await t.handle(new Request(`${t.publicUrl}/openapi.json`))).json()) as any;
    const operation = doc.paths["/api/v1/connectors/{id}"].patch;
    expect(operation.summary).toContain("URL");
    expect(operation.description).toContain("`url` moves the connector");
    const schema = operation.requestBody.content["application/json"].schema;
    const resolved = schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
    expect(resolved.properties.url.type).toBe("string");
    expect(resolved.properties.url.maxLength).toBe(2048);
  });
});
