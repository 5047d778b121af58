import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce, REDIRECT_URI } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";

// The authorization server's metadata tells the truth: no OpenID Connect discovery document (there is no ID token),
// the one scope it knows published in both metadata documents, and only that scope granted — whatever the client
// asked for — with the token response saying so (RFC 6749 §3.3, §5.1).
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let oauth: ReturnType<typeof byHand>;
let connectorId: string;
let proxy: string;
const get = async (path: string) => t.handle(new Request(`${t.publicUrl}${path}`));

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  connectorId = await connectedConnector(alice.api, "https://mcp.example/mcp");
  proxy = `${t.publicUrl}/api/v1/connectors/${connectorId}/mcp`;
  oauth = byHand(t.handle, t.publicUrl);
});
afterAll(() => t.close());

/** Alice authorizes a fresh client asking for `scope`: the token response and her grant's scope. */
async function tokensFor(scope: string | undefined) {
  const client_id = await oauth.register();
  const { verifier, challenge } = pkce();
  const { location } = await approveInForms(
    t.handle,
    oauth.authorizeUrl({ client_id, challenge, resource: proxy, scope }),
    alice.basic,
  );
  const res = await oauth.exchange({ client_id, verifier, code: new URL(location).searchParams.get("code")! }, proxy);
  expect(res.status).toBe(200);
  const tokens = await res.json();
  const grants = (await alice.api("GET", "/api/v1/grants")).body.items as { client_id: string; scope: string | null }[];
  const refreshed = await (
    await oauth.token({ grant_type: "refresh_token", client_id, refresh_token: tokens.refresh_token })
  ).json();
  return { tokens, refreshed, grant: grants.find((g) => g.client_id === client_id)! };
}

describe("discovery", () => {
  test("no OpenID Connect discovery document: there is no ID token, so the path is a 404", async () => {
    const res = await get("/.well-known/openid-configuration");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toStartWith("application/problem+json");
  });

  test("both metadata documents publish the one scope the service knows", async () => {
    const as = await (await get("/.well-known/oauth-authorization-server")).json();
    expect(as.scopes_supported).toEqual(["mcp"]);
    expect(as).not.toHaveProperty("id_token_signing_alg_values_supported");
    const resource = await (await get(`/.well-known/oauth-protected-resource/api/v1/connectors/${connectorId}/mcp`)).json();
    expect(resource.scopes_supported).toEqual(["mcp"]);
    expect((await (await get("/.well-known/oauth-protected-resource")).json()).scopes_supported).toEqual(["mcp"]);
  });
});

describe("granted scope", () => {
  test("a client asking for OpenID scopes gets none of them: the token response says only mcp was granted", async () => {
    const { tokens, refreshed, grant } = await tokensFor("openid email profile");
    expect(tokens.scope).toBe("mcp");
    expect(tokens).not.toHaveProperty("id_token");
    expect(refreshed.scope).toBe("mcp");
    expect(grant.scope).toBe("mcp");
  });

  test("mcp among unknown scopes is granted alone; no scope at all gets the default, mcp", async () => {
    expect((await tokensFor("offline_access mcp admin")).tokens.scope).toBe("mcp");
    const omitted = await tokensFor(undefined);
    expect(omitted.tokens.scope).toBe("mcp");
    expect(omitted.grant.scope).toBe("mcp");
  });

  test("a registration that asks for scopes is answered with the scope it may have", async () => {
    const res = await t.handle(
      new Request(`${t.publicUrl}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], scope: "openid profile" }),
      }),
    );
    expect(res.status).toBe(201);
    expect((await res.json()).scope).toBe("mcp");
  });
});
