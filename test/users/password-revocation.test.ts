import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce, REDIRECT_URI } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";

// A new password and what else ends with it, through app.handle. A password someone else learned is usually not all
// they took: the API tokens and the 30-day grants to MCP clients made with it go on working unless revoked. An
// administrator's reset revokes them by default; a user's own change when asked; the answer says what still works.
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
});
afterAll(() => t.close());

/** A user with an API token, a connector, and a grant to an MCP client there: a ping with its access token, a refresh with its refresh token. */
async function userWithGrant(name: string) {
  const user = await t.user(name);
  const own = `${t.publicUrl}/api/v1/connectors/${await connectedConnector(user.api, `https://mcp.example/${name}`)}/mcp`;
  const oauth = byHand(t.handle, t.publicUrl);
  const client_id = await oauth.register();
  const { verifier, challenge } = pkce();
  const { location } = await approveInForms(t.handle, oauth.authorizeUrl({ client_id, challenge, resource: own }), user.basic);
  const code = new URL(location).searchParams.get("code")!;
  const tokens = await (
    await oauth.token({
      grant_type: "authorization_code",
      client_id,
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      resource: own,
    })
  ).json();
  const ping = async () =>
    (
      await t.handle(
        new Request(own, {
          method: "POST",
          headers: {
            authorization: `Bearer ${tokens.access_token}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
        }),
      )
    ).status;
  const refresh = async () =>
    (await oauth.token({ grant_type: "refresh_token", client_id, refresh_token: tokens.refresh_token })).status;
  expect(await ping()).toBe(200);
  return { ...user, ping, refresh };
}

describe("an administrator's reset", () => {
  test("revokes the user's API tokens and grants by default, and says so", async () => {
    const ursula = await userWithGrant("ursula");
    const reset = await t.api("POST", `/api/v1/users/${ursula.principal.id}/password`, {
      body: { new_password: "reset-by-admin" },
    });
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({
      revoked: { console_sessions: 0, api_tokens: 1, grants: 1 },
      still_working: { console_sessions: 0, api_tokens: 0, grants: 0 },
    });
    expectProblem(await ursula.api("GET", "/api/v1/users/me"), 401);
    expect(await ursula.ping()).toBe(401);
    expect(await ursula.refresh()).toBe(400);
    expect(
      (await ursula.api("GET", "/api/v1/grants", { as: { username: "ursula", password: "reset-by-admin" } })).body.items,
    ).toEqual([]);
  });

  test("keeps them when told, and the answer counts what still works", async () => {
    const victor = await userWithGrant("victor");
    const reset = await t.api("POST", `/api/v1/users/${victor.principal.id}/password`, {
      body: { new_password: "reset-by-admin", revoke_tokens: false, revoke_grants: false },
    });
    expect(reset.body).toEqual({
      revoked: { console_sessions: 0, api_tokens: 0, grants: 0 },
      still_working: { console_sessions: 0, api_tokens: 1, grants: 1 },
    });
    expect((await victor.api("GET", "/api/v1/users/me")).status).toBe(200);
    expect(await victor.ping()).toBe(200);
  });
});

describe("changing one's own password", () => {
  test("keeps tokens and grants unless asked, and says they still work", async () => {
    const wanda = await userWithGrant("wanda");
    const changed = await wanda.api("PUT", "/api/v1/users/me/password", {
      body: { current_password: wanda.basic.password, new_password: "my-new-password" },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({
      revoked: { console_sessions: 0, api_tokens: 0, grants: 0 },
      still_working: { console_sessions: 0, api_tokens: 1, grants: 1 },
    });
    expect(await wanda.ping()).toBe(200);
  });

  test("revoke_tokens and revoke_grants end them with the old password (the token making the change too)", async () => {
    const xena = await userWithGrant("xena");
    const extra = (await xena.api("POST", "/api/v1/tokens", { body: { name: "second" } })).body.token as string;
    const changed = await xena.api("PUT", "/api/v1/users/me/password", {
      body: { current_password: xena.basic.password, new_password: "my-new-password", revoke_tokens: true, revoke_grants: true },
    });
    expect(changed.body).toEqual({
      revoked: { console_sessions: 0, api_tokens: 2, grants: 1 },
      still_working: { console_sessions: 0, api_tokens: 0, grants: 0 },
    });
    expectProblem(await xena.api("GET", "/api/v1/users/me"), 401);
    expectProblem(await xena.api("GET", "/api/v1/users/me", { as: { token: extra } }), 401);
    expect(await xena.ping()).toBe(401);
    expect(await xena.refresh()).toBe(400);
    expect((await xena.api("GET", "/api/v1/users/me", { as: { username: "xena", password: "my-new-password" } })).status).toBe(
      200,
    );
  });

  test("a revocation flag that is not a boolean is a 422 naming it", async () => {
    const yuri = await t.user("yuri");
    const res = await yuri.api("PUT", "/api/v1/users/me/password", {
      body: { current_password: yuri.basic.password, new_password: "my-new-password", revoke_tokens: "yes" },
    });
    expectProblem(res, 422);
    expect(res.text).toContain("revoke_tokens");
  });
});
