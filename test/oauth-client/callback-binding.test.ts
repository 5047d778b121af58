import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { readResponse } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { confirmation, confirmationQuery, finishCallback } from "../support/callback";

// The attack: Mallory connects HER connector to a server Alice uses and sends Alice the authorization URL. Alice
// approves at the authorization server (she is signed in there), and her browser lands on the callback. Before, the
// code was exchanged right there, and Mallory's connector then held Alice's upstream account. Now only a browser
// signed in as the user who started the authorization (Mallory) finishes it.
const oauth = scriptedOAuth();
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let mallory: Awaited<ReturnType<TestApp["user"]>>;

beforeAll(async () => {
  // Few failures allowed, so the brake's test makes few argon2id checks.
  t = await createTestApp({ env: { AUTH__MAX_FAILURES: "3" } });
  t.network.serve(oauth.as, oauth.authorizationServer);
  t.network.serve(oauth.mcp, oauth.mcpServer);
  alice = await t.user("alice");
  mallory = await t.user("mallory");
});
afterAll(() => t.close());

/** A connector of `who` waiting for authorization, and the callback URL once someone approved it. */
async function approvedBy(who: typeof alice) {
  const created = await who.api("POST", "/api/v1/connectors", {
    body: { url: oauth.resource, metadata: { name: `${who.principal.username}'s server` } },
  });
  const connect = await who.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
  expect(connect.body.state).toBe("auth_required");
  return { id: created.body.id as string, callback: oauth.approve(connect.body.auth_request.authorization_url) };
}

async function consoleCookie(who: typeof alice): Promise<string> {
  const res = await t.handle(
    new Request(`${t.publicUrl}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(who.basic),
    }),
  );
  expect(res.status).toBe(201);
  return res.headers.get("set-cookie")!.split(";")[0]!;
}

const exchanges = () => oauth.seen.tokenRequests.filter((f) => f.get("grant_type") === "authorization_code").length;
const stateOf = async (id: string) => (await t.api("GET", `/api/v1/connectors/${id}`)).body.state;

describe("an authorization started by one user, approved in another user's browser", () => {
  test("landing shows who started it and for which connector, and exchanges nothing", async () => {
    const { id, callback } = await approvedBy(mallory);
    const before = exchanges();
    const page = await finishCallback(t, callback);
    expect(page.status).toBe(200);
    expect(page.text).toContain("Connect mallory&#39;s server for mallory?");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    expect(exchanges()).toBe(before);
    expect(await stateOf(id)).toBe("auth_required");
  });

  test("Alice's console session, her password, her cached Basic credentials or nothing at all: refused, nothing exchanged", async () => {
    const { id, callback } = await approvedBy(mallory);
    const query = confirmationQuery((await finishCallback(t, callback)).text)!;
    const before = exchanges();
    const session = await readResponse(
      await t.handle(confirmation(callback, query, undefined, { cookie: await consoleCookie(alice) })),
    );
    expect(session.status).toBe(403);
    expect(session.text).toContain("You are signed in as alice, but mallory started this authorization");
    const password = await readResponse(await t.handle(confirmation(callback, query, alice.basic)));
    expect(password.status).toBe(403);
    const basic = `Basic ${Buffer.from(`${alice.basic.username}:${alice.basic.password}`).toString("base64")}`;
    const ambient = await readResponse(await t.handle(confirmation(callback, query, undefined, { authorization: basic })));
    expect(ambient.status).toBe(401);
    const nobody = await readResponse(await t.handle(confirmation(callback, query)));
    expect(nobody.status).toBe(401);
    expect(nobody.text).toContain("Sign in as mallory to finish");
    expect(exchanges()).toBe(before);
    expect(await stateOf(id)).toBe("auth_required");
    // The refusals used nothing up: the user who started it still can finish (with her own approval, in real life).
    const finished = await readResponse(await t.handle(confirmation(callback, query, mallory.basic)));
    expect(finished.status).toBe(200);
    expect(await stateOf(id)).toBe("connected");
  });

  test("a wrong password on the page counts toward the failure brake like any other", async () => {
    const { callback } = await approvedBy(mallory);
    const query = confirmationQuery((await finishCallback(t, callback)).text)!;
    const statuses: number[] = [];
    for (let i = 0; i < t.config.auth.maxFailures + 1; i++) {
      statuses.push(
        (
          await t.handle(
            confirmation(callback, query, { username: "mallory", password: "wrong" }, { "x-test-client": "guesser" }),
          )
        ).status,
      );
    }
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });
});

describe("the user who started it", () => {
  test("signs in on the page with their user name as typed: a colon in it is not where the password starts", async () => {
    const password = "split:here-and-the-rest";
    expect((await t.api("POST", "/api/v1/users", { body: { username: "nora", password } })).status).toBe(201);
    const nora = t.apiOf({ username: "nora", password });
    const created = await nora("POST", "/api/v1/connectors", { body: { url: oauth.resource } });
    const connect = await nora("POST", `/api/v1/connectors/${created.body.id}/connect`);
    const callback = oauth.approve(connect.body.auth_request.authorization_url);
    const query = confirmationQuery((await finishCallback(t, callback)).text)!;
    const moved = { username: "nora:split", password: "here-and-the-rest" };
    const refused = await t.handle(confirmation(callback, query, moved, { "x-test-client": "colon" }));
    expect(refused.status).toBe(401);
    expect(await stateOf(created.body.id)).toBe("auth_required");
    expect((await finishCallback(t, callback, { username: "nora", password })).status).toBe(200);
    expect(await stateOf(created.body.id)).toBe("connected");
  });

  test("finishes with the console session alone: one click", async () => {
    const { id, callback } = await approvedBy(alice);
    const query = confirmationQuery((await finishCallback(t, callback)).text)!;
    const done = await readResponse(
      await t.handle(confirmation(callback, query, undefined, { cookie: await consoleCookie(alice) })),
    );
    expect(done.status).toBe(200);
    expect(done.text).toContain("Connected");
    expect(await stateOf(id)).toBe("connected");
  });

  test("an authorization an administrator started for Alice's connector is the administrator's to finish", async () => {
    const created = await alice.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } });
    const connect = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    const callback = oauth.approve(connect.body.auth_request.authorization_url);
    expect((await finishCallback(t, callback, alice.basic)).status).toBe(403);
    expect((await finishCallback(t, callback, t.admin.basic)).status).toBe(200);
  });
});
