import { afterAll, beforeAll, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";

// The authorization endpoint is not an open redirector (RFC 9700 §4.11.2): anyone can register a client whose
// redirect URI is their own site, so nothing the request says may send the browser there before a person signed in
// and answered the consent page that names where the answer goes. Every refusal before that is a page.
const PHISH = "https://evil.example/phish";
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let oauth: ReturnType<typeof byHand>;
let proxy: string;
let attacker: string;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  proxy = `${t.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, "https://mcp.example/mcp")}/mcp`;
  oauth = byHand(t.handle, t.publicUrl);
  attacker = await oauth.register({ redirect_uris: [PHISH], client_name: "Totally legit" });
});
afterAll(() => t.close());

/** The attacker's authorization URL with `change` applied to a well-formed one. */
function crafted(change: (params: URLSearchParams) => void): string {
  const url = new URL(
    oauth.authorizeUrl({ client_id: attacker, challenge: pkce().challenge, resource: proxy, redirect_uri: PHISH }),
  );
  change(url.searchParams);
  return url.href;
}

const CRAFTED: Record<string, (params: URLSearchParams) => void> = {
  "an unsupported response_type": (p) => p.set("response_type", "token"),
  "no response_type": (p) => p.delete("response_type"),
  "no PKCE": (p) => (p.delete("code_challenge"), p.delete("code_challenge_method")),
  "plain PKCE": (p) => p.set("code_challenge_method", "plain"),
  "a malformed challenge": (p) => p.set("code_challenge", "short"),
  "no resource": (p) => p.delete("resource"),
  "a resource elsewhere": (p) => p.set("resource", "https://mcp.example/mcp"),
  "an unknown scope": (p) => p.set("scope", "admin"),
  "prompt=none (silent authentication)": (p) => p.set("prompt", "none"),
  "an oversized state": (p) => p.set("state", "s".repeat(5000)),
  "nothing wrong at all": () => {},
};

test("no request to /oauth/authorize sends the browser to a self-registered client's redirect URI before a person acts", async () => {
  for (const [what, change] of Object.entries(CRAFTED)) {
    const res = await t.handle(new Request(crafted(change)));
    const location = res.headers.get("location");
    expect({ what, redirected: res.status >= 300 && res.status < 400, location }).toEqual({
      what,
      redirected: false,
      location: null,
    });
    expect({ what, type: res.headers.get("content-type") }).toEqual({ what, type: "text/html; charset=utf-8" });
    expect(await res.text()).not.toContain("evil.example/phish?");
  }
});

test("the refusal page says what the application got wrong, with the OAuth error code", async () => {
  const res = await t.handle(new Request(crafted(CRAFTED["a resource elsewhere"]!)));
  expect(res.status).toBe(400);
  const page = await res.text();
  expect(page).toContain("invalid_target");
  expect(page).toContain("cannot continue");
});

test("posting the forms without signing in sends the browser nowhere either", async () => {
  const url = crafted(() => {});
  const post = (fields: Record<string, string>) =>
    t.handle(
      new Request(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      }),
    );
  const attempts: Record<string, string>[] = [
    { step: "consent", decision: "deny" },
    { step: "consent", decision: "deny", handle: "made-up" },
    { step: "sign-in", username: "alice", password: "wrong" },
    { step: "sign-in", username: "nobody", password: "" },
    {},
  ];
  for (const fields of attempts) {
    const res = await post(fields);
    expect({ fields, location: res.headers.get("location") }).toEqual({ fields, location: null });
    expect(res.status).toBeGreaterThanOrEqual(400);
  }
});

test("once the person signed in and answered the page that names the destination, the answer goes there", async () => {
  const { location, pages } = await approveInForms(
    t.handle,
    crafted(() => {}),
    alice.basic,
    "deny",
  );
  expect(pages[1]).toContain("evil.example");
  expect(pages[1]).toContain("Unverified");
  expect(location).toStartWith(`${PHISH}?`);
  expect(new URL(location).searchParams.get("error")).toBe("access_denied");
});
