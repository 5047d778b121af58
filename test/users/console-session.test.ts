import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SESSION_TTL_MS } from "../../src/users/sessions";
import { expectProblem, readResponse } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";

// The web console's session, through app.handle: signing in sets an HttpOnly, SameSite=Strict cookie that the API
// accepts in place of Basic or a token; every change made with it needs the session's CSRF token and the service's
// own origin; the MCP proxy never takes it.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.user("alice");
});
afterAll(() => t.close());

type Session = { cookie: string; csrf: string; setCookie: string };

async function signIn(app: TestApp, password = alice.basic.password, headers: Record<string, string> = {}): Promise<Session> {
  const res = await app.handle(
    new Request(`${app.publicUrl}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ username: "alice", password }),
    }),
  );
  const body = await readResponse(res);
  if (res.status !== 201) throw new Error(`sign-in answered ${res.status}: ${body.text}`);
  const setCookie = res.headers.get("set-cookie")!;
  return { cookie: setCookie.split(";")[0]!, csrf: body.body.csrf_token, setCookie };
}

/** A request as the console's page sends it: the cookie, and for changes the CSRF header and its own origin. */
const asConsole = (
  s: Session,
  method: string,
  path: string,
  options: { body?: unknown; csrf?: string | null; origin?: string | null } = {},
) => {
  const headers: Record<string, string> = { cookie: s.cookie };
  const csrf = options.csrf === undefined ? s.csrf : options.csrf;
  if (csrf !== null && method !== "GET") headers["x-csrf-token"] = csrf;
  const origin = options.origin === undefined ? t.publicUrl : options.origin;
  if (origin !== null && method !== "GET") headers.origin = origin;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  return t
    .handle(
      new Request(`${t.publicUrl}${path}`, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      }),
    )
    .then(readResponse);
};

describe("signing in", () => {
  test("sets an HttpOnly, SameSite=Strict cookie and answers who and the CSRF token", async () => {
    const s = await signIn(t);
    // The test app's public URL is plain http to a host that is not loopback: no Secure, so no __Host- either.
    expect(s.setCookie).toMatch(/^cs_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    const me = await asConsole(s, "GET", "/api/v1/session");
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user: { username: "alice", role: "user", disabled: false }, csrf_token: s.csrf });
    expect(me.headers.get("cache-control")).toBe("no-store");
  });

  test("behind https and on loopback the cookie is __Host- and Secure, and a plain cs_session someone planted is no session", async () => {
    for (const publicUrl of ["https://cs.example", "http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"]) {
      const app = await createTestApp({ publicUrl });
      try {
        await app.user("alice");
        const s = await signIn(app);
        expect(s.setCookie, publicUrl).toMatch(
          /^__Host-cs_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/,
        );
        const me = (cookie: string) =>
          app.handle(new Request(`${publicUrl}/api/v1/users/me`, { headers: { cookie } })).then(readResponse);
        expect((await me(s.cookie)).body.username).toBe("alice");
        // A sibling host or a plain-http page can set a cookie without the prefix (cookie tossing): it signs nobody in.
        expectProblem(await me(`cs_session=${s.cookie.split("=")[1]}`), 401);
        const out = await app.handle(
          new Request(`${publicUrl}/api/v1/session`, {
            method: "DELETE",
            headers: { cookie: s.cookie, "x-csrf-token": s.csrf, origin: new URL(publicUrl).origin },
          }),
        );
        expect(out.headers.get("set-cookie")).toBe("__Host-cs_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure");
      } finally {
        await app.close();
      }
    }
  });

  test("a wrong password is a 401 and counts toward AUTH__MAX_FAILURES", async () => {
    const attempt = (password: string) =>
      t.handle(
        new Request(`${t.publicUrl}/api/v1/session`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-test-client": "console-guesser" },
          body: JSON.stringify({ username: "alice", password }),
        }),
      );
    const wrong = await readResponse(await attempt("not-the-password"));
    expectProblem(wrong, 401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    for (let i = 1; i < t.config.auth.maxFailures; i++) await attempt(`guess-${i}`);
    expectProblem(await readResponse(await attempt(alice.basic.password)), 429);
  });

  test("a malformed sign-in is a 422 naming the field", async () => {
    const res = await readResponse(
      await t.handle(
        new Request(`${t.publicUrl}/api/v1/session`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "alice" }),
        }),
      ),
    );
    expectProblem(res, 422);
    expect(res.text).toContain("password");
  });
});

describe("using the session", () => {
  test("reads need only the cookie; changes need the CSRF token and the service's origin", async () => {
    const s = await signIn(t);
    expect((await asConsole(s, "GET", "/api/v1/connectors")).status).toBe(200);
    const body = { url: "https://mcp.example/mcp" };
    expectProblem(await asConsole(s, "POST", "/api/v1/connectors", { body, csrf: null }), 403);
    expectProblem(await asConsole(s, "POST", "/api/v1/connectors", { body, csrf: "forged" }), 403);
    const crossSite = await asConsole(s, "POST", "/api/v1/connectors", { body, origin: "https://evil.example" });
    expectProblem(crossSite, 403);
    expect(crossSite.body.detail).toContain("evil.example");
    // Nothing was created by the refused attempts.
    expect((await asConsole(s, "GET", "/api/v1/connectors")).body.items).toHaveLength(0);
    const created = await asConsole(s, "POST", "/api/v1/connectors", { body });
    expect(created.status).toBe(201);
    expect((await asConsole(s, "DELETE", `/api/v1/connectors/${created.body.id}`, { csrf: null })).status).toBe(403);
    expect((await asConsole(s, "DELETE", `/api/v1/connectors/${created.body.id}`)).status).toBe(204);
  });

  test("the MCP proxy does not take the cookie", async () => {
    const s = await signIn(t);
    const created = await asConsole(s, "POST", "/api/v1/connectors", { body: { url: "https://mcp.example/other" } });
    const res = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${created.body.id}/mcp`, {
        method: "POST",
        headers: { cookie: s.cookie, "x-csrf-token": s.csrf, "content-type": "application/json" },
        body: "{}",
      }),
    );
    expect(res.status).toBe(401);
  });

  test("signing out ends the session and clears the cookie; an expired session is a 401", async () => {
    const s = await signIn(t);
    const out = await asConsole(s, "DELETE", "/api/v1/session");
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toStartWith("cs_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    expectProblem(await asConsole(s, "GET", "/api/v1/connectors"), 401);

    const later = await signIn(t);
    t.clock.advance(SESSION_TTL_MS + 1);
    expectProblem(await asConsole(later, "GET", "/api/v1/connectors"), 401);
  });

  test("changing one's password ends one's other sessions, not this one", async () => {
    const bob = await t.user("bob");
    const login = async () => {
      const res = await t.handle(
        new Request(`${t.publicUrl}/api/v1/session`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "bob", password: bob.basic.password }),
        }),
      );
      const body = await res.json();
      return { cookie: res.headers.get("set-cookie")!.split(";")[0]!, csrf: body.csrf_token, setCookie: "" };
    };
    const here = await login();
    const elsewhere = await login();
    const wrong = await asConsole(here, "PUT", "/api/v1/users/me/password", {
      body: { current_password: "nope", new_password: "a-new-password" },
    });
    expectProblem(wrong, 422);
    expect(wrong.text).toContain("current_password");
    const changed = await asConsole(here, "PUT", "/api/v1/users/me/password", {
      body: { current_password: bob.basic.password, new_password: "a-new-password" },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({
      revoked: { console_sessions: 1, api_tokens: 0, grants: 0 },
      still_working: { console_sessions: 1, api_tokens: 1, grants: 0 },
    });
    expect((await asConsole(here, "GET", "/api/v1/users/me")).status).toBe(200);
    expect((await bob.api("GET", "/api/v1/users/me")).status).toBe(200);
    expectProblem(await asConsole(elsewhere, "GET", "/api/v1/users/me"), 401);
    expectProblem(await bob.api("GET", "/api/v1/users/me", { as: bob.basic }), 401);
    expect((await bob.api("GET", "/api/v1/users/me", { as: { username: "bob", password: "a-new-password" } })).status).toBe(200);
  });
});
