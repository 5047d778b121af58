import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce, REDIRECT_URI } from "../support/oauth-by-hand";

// Every refusal of the authorization server, as the RFC that defines its endpoint names it: the JSON endpoints answer
// one error code as JSON that no cache keeps (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1); the authorization
// endpoint answers a page for the person, never a redirect, until they answered.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let oauth: ReturnType<typeof byHand>;
let proxy: string;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  proxy = `${t.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, "https://mcp.example/mcp")}/mcp`;
  oauth = byHand(t.handle, t.publicUrl);
});
afterAll(() => t.close());

const post = (path: string, body: string, type = "application/x-www-form-urlencoded", headers: Record<string, string> = {}) =>
  t.handle(new Request(`${t.publicUrl}${path}`, { method: "POST", headers: { "content-type": type, ...headers }, body }));

/** The one shape of a JSON error: the code, a description, and headers that keep it out of caches and sniffers. */
async function oauthError(res: Response) {
  expect({
    type: res.headers.get("content-type"),
    cache: res.headers.get("cache-control"),
    pragma: res.headers.get("pragma"),
    sniff: res.headers.get("x-content-type-options"),
  }).toEqual({ type: "application/json", cache: "no-store", pragma: "no-cache", sniff: "nosniff" });
  const body = await res.json();
  expect(Object.keys(body).sort()).toEqual(["error", "error_description"]);
  return { status: res.status, error: body.error as string, description: body.error_description as string };
}

describe("the JSON endpoints", () => {
  test("the token endpoint: a grant type named like an object's own property is an unsupported grant type, not a crash", async () => {
    const client_id = await oauth.register();
    for (const grant_type of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
      const refused = await oauthError(await oauth.token({ grant_type, client_id }));
      expect({ grant_type, status: refused.status, error: refused.error }).toEqual({
        grant_type,
        status: 400,
        error: "unsupported_grant_type",
      });
    }
  });

  test("the token and revocation endpoints: a missing parameter, an unknown client, an oversized form", async () => {
    const client_id = await oauth.register();
    const cases: [Promise<Response>, number, string, string][] = [
      [oauth.token({ grant_type: "authorization_code", code: "x" }), 400, "invalid_request", "client_id is required"],
      [oauth.token({ grant_type: "refresh_token", client_id: "nobody", refresh_token: "x" }), 401, "invalid_client", "no client"],
      [oauth.token({ grant_type: "refresh_token", client_id, refresh_token: "csr_x" }), 400, "invalid_grant", "unknown"],
      [oauth.revoke({ client_id }), 400, "invalid_request", "token is required"],
      [oauth.revoke({ token: "csa_x" }), 400, "invalid_request", "client_id is required"],
      [oauth.revoke({ client_id: "nobody", token: "csa_x" }), 401, "invalid_client", "no client"],
      [post("/oauth/revoke", "{}", "application/json"), 400, "invalid_request", "x-www-form-urlencoded"],
      [post("/oauth/token", `grant_type=refresh_token&pad=${"x".repeat(17_000)}`), 400, "invalid_request", "larger than"],
    ];
    for (const [res, status, error, words] of cases) {
      const refused = await oauthError(await res);
      expect({ status: refused.status, error: refused.error }).toEqual({ status, error });
      expect(refused.description).toContain(words);
    }
  });

  test("registration: an oversized document is invalid client metadata", async () => {
    const huge = JSON.stringify({ redirect_uris: [REDIRECT_URI], pad: "x".repeat(17_000) });
    const refused = await oauthError(await post("/oauth/register", huge, "application/json"));
    expect({ status: refused.status, error: refused.error }).toEqual({ status: 400, error: "invalid_client_metadata" });
    expect(refused.description).toContain("larger than");
  });

  test("a browser-based client can read the errors: they carry the CORS headers", async () => {
    const res = await post("/oauth/token", "grant_type=password", undefined, { origin: "https://app.example" });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect((await oauthError(res)).error).toBe("unsupported_grant_type");
  });
});

describe("the authorization endpoint's pages", () => {
  /** A page refusing the request: HTML, not kept, never a redirect; its text. */
  async function refusedPage(res: Response, status = 400) {
    expect({
      status: res.status,
      location: res.headers.get("location"),
      type: res.headers.get("content-type"),
      cache: res.headers.get("cache-control"),
    }).toEqual({ status, location: null, type: "text/html; charset=utf-8", cache: "no-store" });
    return res.text();
  }

  test("a request that is not the code flow with PKCE is named by its RFC code, on a page", async () => {
    const client_id = await oauth.register();
    const { challenge } = pkce();
    const url = (change: (params: URLSearchParams) => void) => {
      const u = new URL(oauth.authorizeUrl({ client_id, challenge, resource: proxy }));
      change(u.searchParams);
      return u;
    };
    const cases: [URL, string][] = [
      [url((p) => p.set("response_type", "token")), "(unsupported_response_type)"],
      [url((p) => p.append("state", "again")), "(invalid_request): state is repeated"],
      [url((p) => p.set("state", "x".repeat(2049))), "(invalid_request): state is longer than 2048 characters"],
      [url((p) => p.delete("code_challenge")), "(invalid_request): PKCE is required"],
      [url((p) => p.delete("client_id")), "names no client"],
    ];
    for (const [request, words] of cases) expect(await refusedPage(await t.handle(new Request(request)))).toContain(words);
  });

  test("a form too large, or a consent before any sign-in: a page", async () => {
    const client_id = await oauth.register();
    const url = oauth.authorizeUrl({ client_id, challenge: pkce().challenge, resource: proxy });
    const form = (body: string) =>
      t.handle(new Request(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body }));
    expect(await refusedPage(await form(`step=sign-in&pad=${"x".repeat(17_000)}`), 413)).toContain("too large");
    expect(await refusedPage(await form("step=consent&decision=allow"))).toContain("Sign in first");
    expect(await refusedPage(await form("decision=allow"))).toContain("Sign in first");
  });
});
