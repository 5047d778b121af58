import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { finishCallback } from "../support/callback";
import { createTestApp, type TestApp } from "../support/app";
import { mcpClient, toolText } from "../support/mcp";
import { storedGrant } from "../support/oauth";
import { expectProblem } from "../support/api";
import { sql } from "drizzle-orm";
import { queryRows } from "../support/store";
import { waitFor } from "../support/wait";

// A connector's OAuth authorization through app.handle, against a scripted authorization server in-process and a
// stepped clock; the same flows run against oidc-provider in flow.test.ts and callback-errors.test.ts.
const oauth = scriptedOAuth();
const APP = "https://app.example";
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ env: { OAUTH__ALLOWED_REDIRECT_ORIGINS: APP } });
  t.network.serve(oauth.as, oauth.authorizationServer);
  t.network.serve(oauth.mcp, oauth.mcpServer);
});
afterAll(() => t.close());

/** A connector waiting for the user: its id and the authorization URL the user would open. */
async function pending(body: Record<string, unknown> = {}) {
  const created = await t.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } });
  const connect = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body });
  expect(connect.body.state).toBe("auth_required");
  return { id: created.body.id as string, url: connect.body.auth_request.authorization_url as string };
}
/** The browser lands on the callback. */
/** The browser lands on the callback, and the administrator who started the authorization finishes it there. */
const land = (callback: string) => finishCallback(t, callback, t.admin.basic);
const connector = async (id: string) => (await t.api("GET", `/api/v1/connectors/${id}`)).body;
const whoami = async (id: string) => {
  const { client, close } = await mcpClient(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, { token: t.admin.token }, t.handle);
  const token = toolText(await client.callTool({ name: "whoami", arguments: {} }));
  await close();
  return token;
};

describe("the callback", () => {
  test("exchanges the code with its PKCE verifier and the resource, then the proxy sends the new access token", async () => {
    const { id, url } = await pending();
    const landed = await land(oauth.approve(url));
    expect(landed.status).toBe(200);
    expect(landed.text).toContain("Connected");
    expect(await connector(id)).toMatchObject({ state: "connected", auth_request: null, disconnect_reason: null });
    // The scripted server refuses a verifier that does not match the challenge, so getting here proves PKCE S256.
    const exchange = oauth.seen.tokenRequests.at(-1)!;
    expect(exchange.get("grant_type")).toBe("authorization_code");
    expect(exchange.get("resource")).toBe(oauth.resource);
    expect(await whoami(id)).toBe(oauth.seen.mcpAuthorizations.at(-1)!);
  });

  test("a replayed callback is an error page; the connector stays connected", async () => {
    const { id, url } = await pending();
    const callback = oauth.approve(url);
    expect((await land(callback)).status).toBe(200);
    const replay = await land(callback);
    expect(replay.status).toBe(400);
    expect(replay.headers.get("content-type")).toStartWith("text/html");
    expect(replay.text).toContain("already used or has expired");
    expect((await connector(id)).state).toBe("connected");
  });

  test("an authorization left for more than 10 minutes has expired: error page, the connector disconnected saying so", async () => {
    const { id, url } = await pending();
    t.clock.advance(10 * 60_000);
    const late = await land(oauth.approve(url));
    expect(late.status).toBe(400);
    expect(late.text).toContain("already used or has expired");
    const after = await connector(id);
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("expired");
  });

  test("an iss that is not the authorization server's is refused (RFC 9207): no code exchange", async () => {
    const { id, url } = await pending();
    const exchanges = oauth.seen.tokenRequests.length;
    oauth.state.issuerInRedirect = "https://impostor.example";
    try {
      const landed = await land(oauth.approve(url));
      expect(landed.status).toBe(400);
      expect(oauth.seen.tokenRequests.length).toBe(exchanges);
      const after = await connector(id);
      expect(after.state).toBe("disconnected");
      expect(after.disconnect_reason).toContain("Authorization failed");
    } finally {
      oauth.state.issuerInRedirect = oauth.as;
    }
  });

  test("access denied with a redirect_url: 303 there with error and error_description", async () => {
    const { id, url } = await pending({ redirect_url: `${APP}/done?from=cs` });
    const landed = await land(oauth.deny(url));
    expect(landed.status).toBe(303);
    const target = new URL(landed.headers.get("location")!);
    expect(target.origin + target.pathname).toBe(`${APP}/done`);
    expect(Object.fromEntries(target.searchParams)).toEqual({
      from: "cs",
      error: "access_denied",
      error_description: "The user said no",
    });
    expect((await connector(id)).disconnect_reason).toBe("Authorization failed: access_denied: The user said no");
  });

  test("success with a redirect_url: 303 there, with nothing added", async () => {
    const { url } = await pending({ redirect_url: `${APP}/done` });
    const landed = await land(oauth.approve(url));
    expect(landed.status).toBe(303);
    expect(landed.headers.get("location")).toBe(`${APP}/done`);
  });

  test("an unknown or missing state is an error page naming invalid_request", async () => {
    for (const query of ["?code=abc&state=forged-state", "?code=abc", ""]) {
      const res = await land(`${t.publicUrl}/api/v1/connectors/oauth/callback${query}`);
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toStartWith("text/html");
      expect(res.text).toContain("invalid_request");
    }
  });

  test("a redirect_url outside the allowed origins is refused at connect (no open redirect)", async () => {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } });
    const res = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`, {
      body: { redirect_url: "https://evil.example/steal" },
    });
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe("body.redirect_url");
  });
});

describe("after the callback", () => {
  test("the scheduler removes authorizations nobody finished, once they expire", async () => {
    await pending();
    const count = async () => Number((await queryRows<{ n: number }>(t.deps, sql`SELECT count(*) AS n FROM oauth_states`))[0]!.n);
    expect(await count()).toBeGreaterThan(0);
    t.clock.advance(10 * 60_000);
    await t.runJobs();
    expect(await count()).toBe(0);
  });

  test("an access token the server stopped accepting is refreshed once and the request replayed; the refresh token rotates", async () => {
    const { id, url } = await pending();
    await land(oauth.approve(url));
    const before = await whoami(id);
    const grant = (await storedGrant(t, id))!;
    oauth.expireAccessTokens();
    const refreshes = oauth.seen.tokenRequests.filter((f) => f.get("grant_type") === "refresh_token").length;
    const after = await whoami(id);
    expect(after).not.toBe(before);
    expect(oauth.seen.tokenRequests.filter((f) => f.get("grant_type") === "refresh_token").length).toBe(refreshes + 1);
    expect(oauth.seen.tokenRequests.at(-1)!.get("resource")).toBe(oauth.resource);
    expect(oauth.seen.tokenRequests.at(-1)!.get("refresh_token")).toBe(grant.refresh_token);
    expect((await storedGrant(t, id))!.refresh_token).not.toBe(grant.refresh_token);
  });

  test("a refresh the server refuses with invalid_grant disconnects the connector, with the server's words", async () => {
    const { id, url } = await pending();
    await land(oauth.approve(url));
    oauth.state.tokenError = "invalid_grant";
    try {
      t.clock.advance(0.81 * 3_600_000);
      await t.runJobs();
    } finally {
      oauth.state.tokenError = undefined;
    }
    const after = await connector(id);
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toBe(
      "OAuth token refresh failed: the authorization server answered invalid_grant: scripted refusal",
    );
  });

  test("disconnect revokes the refresh token, then the access token, at the authorization server (RFC 7009)", async () => {
    const { id, url } = await pending();
    await land(oauth.approve(url));
    const issued = oauth.seen.tokenRequests.length;
    expect(issued).toBeGreaterThan(0);
    const revokedBefore = oauth.seen.revoked.length;
    expect((await t.api("POST", `/api/v1/connectors/${id}/disconnect`)).body.state).toBe("disconnected");
    // Revocation runs after the answer (the connection's end does not wait for the authorization server).
    await waitFor("both revocations", () => oauth.seen.revoked.length - revokedBefore >= 2, 5_000);
    const revoked = oauth.seen.revoked.slice(revokedBefore);
    expect(revoked).toHaveLength(2);
    expect(revoked[0]).toStartWith("rt-");
    expect(revoked[1]).toStartWith("at-");
  });
});
