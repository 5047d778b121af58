import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ACCESS_TOKEN_TTL_MS, UNUSED_CLIENT_TTL_MS } from "../../src/oauth-server/model";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce, REDIRECT_URI } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";

// Bad and hostile inputs to the authorization server, through app.handle: each is a clear error, and nothing is
// granted — no token, no redirect to a place the client did not register, no access beyond the one connector.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;
let oauth: ReturnType<typeof byHand>;
let proxyA: string;
let proxyB: string;
let proxyOfBob: string;
const PING = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  bob = await t.user("bob");
  const url = (id: string) => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
  proxyA = url(await connectedConnector(alice.api, "https://mcp.example/a"));
  proxyB = url(await connectedConnector(alice.api, "https://mcp.example/b"));
  proxyOfBob = url(await connectedConnector(bob.api, "https://mcp.example/bob"));
  oauth = byHand(t.handle, t.publicUrl);
});
afterAll(() => t.close());

/** A ping at a proxy URL with a bearer token: the response. */
const ping = (proxy: string, token: string) =>
  t.handle(
    new Request(proxy, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: PING,
    }),
  );

/** Alice authorizes a fresh client for `resource`: its id, verifier and code. */
async function authorized(resource = proxyA) {
  const client_id = await oauth.register();
  const { verifier, challenge } = pkce();
  const { location } = await approveInForms(t.handle, oauth.authorizeUrl({ client_id, challenge, resource }), alice.basic);
  const code = new URL(location).searchParams.get("code");
  if (!code) throw new Error(`no code: ${location}`);
  return { client_id, verifier, code };
}

const exchange = (a: { client_id: string; verifier: string; code: string }, overrides: Record<string, string> = {}) =>
  oauth.token({
    grant_type: "authorization_code",
    client_id: a.client_id,
    code: a.code,
    code_verifier: a.verifier,
    redirect_uri: REDIRECT_URI,
    resource: proxyA,
    ...overrides,
  });

async function expectOAuthError(res: Response, status: number, error: string) {
  expect(res.headers.get("content-type")).toBe("application/json");
  expect(res.headers.get("cache-control")).toBe("no-store");
  const body = await res.json();
  expect({ status: res.status, error: body.error }).toEqual({ status, error });
  expect(body.error_description.length).toBeGreaterThan(10);
  return body;
}

describe("the token endpoint", () => {
  test("a wrong PKCE verifier, another client's id or another redirect_uri gets invalid_grant and no token; the code stays good for its client", async () => {
    const a = await authorized();
    await expectOAuthError(await exchange(a, { code_verifier: pkce().verifier }), 400, "invalid_grant");
    await expectOAuthError(await exchange(a, { code_verifier: "short" }), 400, "invalid_grant");
    const other = await oauth.register();
    await expectOAuthError(await exchange(a, { client_id: other }), 400, "invalid_grant");
    await expectOAuthError(await exchange(a, { client_id: "no-such-client" }), 401, "invalid_client");
    await expectOAuthError(await exchange(a, { redirect_uri: "http://127.0.0.1:33418/other" }), 400, "invalid_grant");
    await expectOAuthError(await exchange(a, { resource: proxyB }), 400, "invalid_target");
    // Someone who saw the code but lacks the verifier cannot spoil it for the client that holds it.
    const tokens = await exchange(a);
    expect(tokens.status).toBe(200);
    expect((await ping(proxyA, (await tokens.json()).access_token)).status).toBe(200);
  });

  test("a code used twice is refused, and the tokens its first use gave stop working (OAuth 2.1 §4.1.3)", async () => {
    const a = await authorized();
    const first = await (await exchange(a)).json();
    expect((await ping(proxyA, first.access_token)).status).toBe(200);
    await expectOAuthError(await exchange(a), 400, "invalid_grant");
    expect((await ping(proxyA, first.access_token)).status).toBe(401);
    await expectOAuthError(
      await oauth.token({ grant_type: "refresh_token", client_id: a.client_id, refresh_token: first.refresh_token }),
      400,
      "invalid_grant",
    );
  });

  test("an expired code, an unknown grant type, a form repeated or sent as JSON: clear errors", async () => {
    const a = await authorized();
    t.clock.advance(61_000);
    await expectOAuthError(await exchange(a), 400, "invalid_grant");
    await expectOAuthError(await oauth.token({ grant_type: "password", client_id: a.client_id }), 400, "unsupported_grant_type");
    const repeated = await t.handle(
      new Request(`${t.publicUrl}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=refresh_token&grant_type=authorization_code",
      }),
    );
    expect((await expectOAuthError(repeated, 400, "invalid_request")).error_description).toContain("grant_type is repeated");
    const json = await t.handle(
      new Request(`${t.publicUrl}/oauth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
    );
    await expectOAuthError(json, 400, "invalid_request");
  });

  test("a code never exchanged leaves no grant behind once it expires", async () => {
    const a = await authorized();
    const clients = async () =>
      (await alice.api("GET", "/api/v1/grants")).body.items.map((g: { client_id: string }) => g.client_id);
    expect(await clients()).toContain(a.client_id);
    t.clock.advance(2 * 60_000);
    await t.runJobs();
    expect(await clients()).not.toContain(a.client_id);
  });

  test("a refresh token used twice ends the grant (OAuth 2.1 §4.3.1)", async () => {
    const a = await authorized();
    const first = await (await exchange(a)).json();
    const refresh = { grant_type: "refresh_token", client_id: a.client_id, refresh_token: first.refresh_token };
    const second = await (await oauth.token(refresh)).json();
    expect((await ping(proxyA, second.access_token)).status).toBe(200);
    await expectOAuthError(await oauth.token(refresh), 400, "invalid_grant");
    expect((await ping(proxyA, second.access_token)).status).toBe(401);
    await expectOAuthError(await oauth.token({ ...refresh, refresh_token: second.refresh_token }), 400, "invalid_grant");
  });
});

describe("the authorization endpoint", () => {
  test("an unregistered redirect URI or an unknown client: an error page, never a redirect (RFC 6749 §4.1.2.1)", async () => {
    const client_id = await oauth.register();
    const { challenge } = pkce();
    for (const url of [
      oauth.authorizeUrl({ client_id, challenge, resource: proxyA, redirect_uri: "https://evil.example/callback" }),
      oauth.authorizeUrl({ client_id, challenge, resource: proxyA, redirect_uri: `${REDIRECT_URI}/` }),
      oauth.authorizeUrl({ client_id: "no-such-client", challenge, resource: proxyA }),
    ]) {
      const res = await t.handle(new Request(url));
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("content-type")).toStartWith("text/html");
      expect(await res.text()).toContain("cannot continue");
    }
  });

  test("resource missing, or not a proxy URL of this service: a page naming invalid_target, before any sign-in and without a redirect", async () => {
    const client_id = await oauth.register();
    const { challenge } = pkce();
    const refused = async (url: string | URL) => {
      const res = await t.handle(new Request(url));
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      return res.text();
    };
    for (const resource of [undefined, "https://mcp.example/a", `${t.publicUrl}/api/v1/connectors`, `${proxyA}/../../users`]) {
      expect(await refused(oauth.authorizeUrl({ client_id, challenge, resource, state: "s-9" }))).toContain("(invalid_target)");
    }
    // No PKCE, or plain PKCE: refused the same way.
    const plain = new URL(oauth.authorizeUrl({ client_id, challenge, resource: proxyA }));
    plain.searchParams.set("code_challenge_method", "plain");
    expect(await refused(plain)).toContain("(invalid_request)");
  });

  test("another user's connector as the resource: the consent page does not show it, and allowing gives invalid_target, no code", async () => {
    const client_id = await oauth.register();
    const { challenge } = pkce();
    const { location, pages } = await approveInForms(
      t.handle,
      oauth.authorizeUrl({ client_id, challenge, resource: proxyOfBob }),
      alice.basic,
    );
    expect(pages[1]).toContain("not yours");
    expect(pages[1]).not.toContain("https://mcp.example/bob");
    const back = new URL(location).searchParams;
    expect(back.get("error")).toBe("invalid_target");
    expect(back.get("code")).toBeNull();
    expect((await alice.api("GET", "/api/v1/grants")).body.items.map((g: { client_id: string }) => g.client_id)).not.toContain(
      client_id,
    );
  });

  test("deny sends access_denied back with state and iss; the page cannot be answered twice", async () => {
    const client_id = await oauth.register();
    const { challenge } = pkce();
    const url = oauth.authorizeUrl({ client_id, challenge, resource: proxyA, state: "s-deny" });
    const post = (fields: Record<string, string>) =>
      t.handle(
        new Request(url, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(fields).toString(),
        }),
      );
    // Consent before sign-in is not consent.
    expect((await post({ step: "consent", decision: "allow" })).status).toBe(400);
    const consent = await post({ step: "sign-in", username: "alice", password: alice.basic.password });
    expect(consent.status).toBe(200);
    const handle = /name="handle" value="([^"]+)"/.exec(await consent.text())![1]!;
    const denied = await post({ handle, step: "consent", decision: "deny" });
    expect(denied.status).toBe(303);
    expect(Object.fromEntries(new URL(denied.headers.get("location")!).searchParams)).toMatchObject({
      error: "access_denied",
      state: "s-deny",
      iss: t.publicUrl,
    });
    const twice = await post({ handle, step: "consent", decision: "allow" });
    expect(twice.status).toBe(400);
    expect(twice.headers.get("location")).toBeNull();
    expect(await twice.text()).toContain("already used");
  });

  test("wrong passwords on the sign-in page count toward AUTH__MAX_FAILURES like any other", async () => {
    const client_id = await oauth.register();
    const { challenge } = pkce();
    const url = oauth.authorizeUrl({ client_id, challenge, resource: proxyA });
    const signIn = (password: string) =>
      t.handle(
        new Request(url, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-test-client": "guesser" },
          body: new URLSearchParams({ step: "sign-in", username: "alice", password }).toString(),
        }),
      );
    for (let i = 0; i < t.config.auth.maxFailures; i++) {
      const wrong = await signIn(`guess-${i}`);
      expect(wrong.status).toBe(401);
      expect(await wrong.text()).toContain("Wrong user name or password");
    }
    const braked = await signIn(alice.basic.password);
    expect(braked.status).toBe(429);
    expect(braked.headers.get("location")).toBeNull();
    // The page says when to try again, as the brake's 429 does elsewhere (RFC 6585 §4).
    expect(Number(braked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await braked.text()).not.toContain('name="decision"');
  });
});

describe("access tokens", () => {
  test("good at their connector only: refused at another connector and at the REST API (401 invalid_token)", async () => {
    const tokens = await (await exchange(await authorized())).json();
    expect((await ping(proxyA, tokens.access_token)).status).toBe(200);
    const elsewhere = await ping(proxyB, tokens.access_token);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect((await elsewhere.json()).type).toBe("/problems/invalid-token");
    const api = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors`, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
    );
    expect(api.status).toBe(401);
    expect(api.headers.get("content-type")).toBe("application/problem+json");
    expect(
      (
        await t.handle(
          new Request(`${t.publicUrl}/api/v1/grants`, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
        )
      ).status,
    ).toBe(401);
  });

  test("expired: 401 invalid_token (the client's cue to refresh), and the refresh gives a working one", async () => {
    const a = await authorized();
    const tokens = await (await exchange(a)).json();
    t.clock.advance(ACCESS_TOKEN_TTL_MS + 1_000);
    const expired = await ping(proxyA, tokens.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const refreshed = await (
      await oauth.token({ grant_type: "refresh_token", client_id: a.client_id, refresh_token: tokens.refresh_token })
    ).json();
    expect((await ping(proxyA, refreshed.access_token)).status).toBe(200);
  });

  test("revoked (RFC 7009): an access token stops at once; a refresh token ends the grant; another client's revocation does nothing", async () => {
    const a = await authorized();
    const tokens = await (await exchange(a)).json();
    const stranger = await oauth.register();
    expect((await oauth.revoke({ client_id: stranger, token: tokens.access_token })).status).toBe(200);
    expect((await ping(proxyA, tokens.access_token)).status).toBe(200);

    expect((await oauth.revoke({ client_id: a.client_id, token: tokens.access_token })).status).toBe(200);
    expect((await ping(proxyA, tokens.access_token)).status).toBe(401);
    const again = await (
      await oauth.token({ grant_type: "refresh_token", client_id: a.client_id, refresh_token: tokens.refresh_token })
    ).json();
    expect((await ping(proxyA, again.access_token)).status).toBe(200);

    expect((await oauth.revoke({ client_id: a.client_id, token: again.refresh_token })).status).toBe(200);
    expect((await ping(proxyA, again.access_token)).status).toBe(401);
    await expectOAuthError(
      await oauth.token({ grant_type: "refresh_token", client_id: a.client_id, refresh_token: again.refresh_token }),
      400,
      "invalid_grant",
    );
    // Unknown tokens are not an error (RFC 7009 §2.2).
    expect((await oauth.revoke({ client_id: a.client_id, token: "csr_never-issued" })).status).toBe(200);
  });

  test("expired ones are refused even when the client keeps sending them, without locking the client out", async () => {
    const a = await authorized();
    const tokens = await (await exchange(a)).json();
    t.clock.advance(ACCESS_TOKEN_TTL_MS + 1_000);
    for (let i = 0; i < t.config.auth.maxFailures + 2; i++) expect((await ping(proxyA, tokens.access_token)).status).toBe(401);
    const refreshed = await (
      await oauth.token({ grant_type: "refresh_token", client_id: a.client_id, refresh_token: tokens.refresh_token })
    ).json();
    expect((await ping(proxyA, refreshed.access_token)).status).toBe(200);
  });
});

describe("client registration", () => {
  test("bad metadata is a 400 naming what is wrong, in RFC 7591 §3.2.2 terms", async () => {
    const register = (body: string) =>
      t.handle(
        new Request(`${t.publicUrl}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body }),
      );
    for (const [body, error] of [
      [JSON.stringify({ redirect_uris: ["http://app.example/cb"] }), "invalid_redirect_uri"],
      [JSON.stringify({ redirect_uris: ["https://app.example/cb#frag"] }), "invalid_redirect_uri"],
      [JSON.stringify({ redirect_uris: [] }), "invalid_client_metadata"],
      [
        JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "client_secret_basic" }),
        "invalid_client_metadata",
      ],
      ["{not json", "invalid_client_metadata"],
      [JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "x".repeat(20_000) }), "invalid_client_metadata"],
    ] as const) {
      await expectOAuthError(await register(body), 400, error);
    }
  });

  test("a flood of registrations beyond AUTHSERVER__MAX_REGISTRATIONS is refused (429); unused ones expire and make room", async () => {
    const small = await createTestApp({ env: { AUTHSERVER__MAX_REGISTRATIONS: "3" } });
    try {
      const oauthSmall = byHand(small.handle, small.publicUrl);
      for (let i = 0; i < 3; i++) await oauthSmall.register();
      const refused = await small.handle(
        new Request(`${small.publicUrl}/oauth/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
        }),
      );
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).not.toBeNull();
      expect((await refused.json()).error).toBe("temporarily_unavailable");
      small.clock.advance(UNUSED_CLIENT_TTL_MS + 1_000);
      await small.runJobs();
      expect(await oauthSmall.register()).toBeString();
    } finally {
      await small.close();
    }
  });
});

describe("Client ID Metadata Documents", () => {
  /** The error page a client with this metadata document URL gets at the authorization endpoint. */
  async function refusedPage(clientId: string): Promise<string> {
    const res = await t.handle(
      new Request(oauth.authorizeUrl({ client_id: clientId, challenge: pkce().challenge, resource: proxyA })),
    );
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    return res.text();
  }

  test("on a private, loopback or link-local address: never fetched, whatever SECURITY__BLOCK_PRIVATE_NETWORKS says", async () => {
    for (const origin of ["https://10.0.0.5", "https://169.254.169.254", "https://127.0.0.1:8443", "https://[::1]"]) {
      const clientId = `${origin}/client.json`;
      t.network.serve(origin, () => Response.json({ client_id: clientId, redirect_uris: [REDIRECT_URI] }));
      const before = t.network.requests.length;
      expect(await refusedPage(clientId)).toContain("could not be fetched");
      expect(t.network.requests.length).toBe(before);
      t.network.remove(origin);
    }
  });

  test("oversized, not JSON, naming another client_id, without redirect URIs, or redirecting elsewhere: refused with the reason", async () => {
    const documents: Record<string, (id: string) => Response> = {
      "/huge.json": (id) => Response.json({ client_id: id, redirect_uris: [REDIRECT_URI], client_name: "x".repeat(20_000) }),
      "/garbage.json": () => new Response("<html>not json</html>", { headers: { "content-type": "text/html" } }),
      "/impostor.json": () =>
        Response.json({ client_id: "https://someone-else.example/client.json", redirect_uris: [REDIRECT_URI] }),
      "/no-redirects.json": (id) => Response.json({ client_id: id }),
      "/plain-http.json": (id) => Response.json({ client_id: id, redirect_uris: ["http://app.example/cb"] }),
      "/moved.json": () => new Response(null, { status: 302, headers: { location: "https://docs.example/other.json" } }),
    };
    t.network.serve("https://docs.example", (request) => documents[new URL(request.url).pathname]!(request.url));
    const reasons: Record<string, string> = {
      "/huge.json": "larger than",
      "/garbage.json": "not JSON",
      "/impostor.json": "does not name itself",
      "/no-redirects.json": "redirect_uris",
      "/plain-http.json": "redirect URI this server does not accept",
      "/moved.json": "HTTP 302",
    };
    for (const [path, reason] of Object.entries(reasons))
      expect(await refusedPage(`https://docs.example${path}`)).toContain(reason);
    // Not a metadata document URL at all (http, no path): an unknown client.
    expect(await refusedPage("http://docs.example/client.json")).toContain("there is no client");
  });
});
