import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce } from "../support/oauth-by-hand";

// The person's pages of the authorization flow (sign-in, consent, errors) and the OAuth answers: a policy that
// allows nothing but the page's own style, no framing (clickjacking the Allow button), forms posted only where they
// must go, and no content sniffing. The real-browser side is in browser.test.ts.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let oauth: ReturnType<typeof byHand>;
let url: string;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  const proxy = `${t.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, "https://mcp.example/mcp")}/mcp`;
  oauth = byHand(t.handle, t.publicUrl);
  const client_id = await oauth.register({ redirect_uris: ["https://app.example:8443/cb"] });
  url = oauth.authorizeUrl({
    client_id,
    challenge: pkce().challenge,
    resource: proxy,
    redirect_uri: "https://app.example:8443/cb",
  });
});
afterAll(() => t.close());

/** The policy's directives by name. */
const directives = (csp: string | null) =>
  Object.fromEntries(
    (csp ?? "")
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name, values.join(" ")]),
  );

async function expectLockedDown(res: Response, formAction: string) {
  expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  const csp = directives(res.headers.get("content-security-policy"));
  const html = await res.text();
  // The one inline style is allowed by its hash; nothing inline beyond it, no script at all.
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
  expect(csp).toEqual({
    "default-src": "'none'",
    "style-src": `'sha256-${createHash("sha256").update(style).digest("base64")}'`,
    "form-action": formAction,
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
  });
  expect(html).not.toContain("<script");
  return html;
}

test("sign-in, consent and error pages: no framing, no sniffing, no script; forms post to this page, consent also to the client's origin", async () => {
  await expectLockedDown(await t.handle(new Request(url)), "'self'");
  const consent = await t.handle(
    new Request(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ step: "sign-in", username: "alice", password: alice.basic.password }).toString(),
    }),
  );
  // Allow or Deny is answered with a redirect to the client: the browser checks that against form-action too.
  expect(await expectLockedDown(consent, "'self' https://app.example:8443")).toContain('name="decision"');
  await expectLockedDown(await t.handle(new Request(`${t.publicUrl}/oauth/authorize?client_id=nobody`)), "'none'");
});

test("a native app's redirect URI (its own scheme) is allowed as the consent form's destination by that scheme alone", async () => {
  const client_id = await oauth.register({ redirect_uris: ["com.example.app:/oauth/cb"] });
  const page = new URL(url);
  page.searchParams.set("client_id", client_id);
  page.searchParams.set("redirect_uri", "com.example.app:/oauth/cb");
  const consent = await t.handle(
    new Request(page, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ step: "sign-in", username: "alice", password: alice.basic.password }).toString(),
    }),
  );
  await expectLockedDown(consent, "'self' com.example.app:");
});

test("OAuth JSON answers are not sniffed either", async () => {
  for (const res of [
    await t.handle(new Request(`${t.publicUrl}/.well-known/oauth-authorization-server`)),
    await oauth.token({ grant_type: "authorization_code", client_id: "nobody", code: "x" }),
    await t.handle(
      new Request(`${t.publicUrl}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      }),
    ),
  ]) {
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  }
});
