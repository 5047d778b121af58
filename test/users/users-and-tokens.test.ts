import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app";
import { expectProblem } from "../support/api";
import { sql } from "drizzle-orm";
import { queryRows } from "../support/store";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** A user made through the API (argon2id and all), as an administrator makes one; its API authenticates with Basic. */
async function createUser(username: string) {
  const password = `${username}-password`;
  const res = await t.api("POST", "/api/v1/users", { body: { username, password, role: "user" } });
  if (res.status !== 201) throw new Error(`creating ${username}: ${res.status} ${res.text}`);
  return { username, password, id: res.body.id as string, api: t.apiOf({ username, password }) };
}

describe("users", () => {
  test("an administrator creates users; a user cannot", async () => {
    const res = await t.api("POST", "/api/v1/users", { body: { username: "dave", password: "dave-password", role: "user" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/api/v1/users/${res.body.id}`);
    expect(res.body).toMatchObject({ username: "dave", role: "user" });
    expect(res.text).not.toContain("dave-password");
    const dave = t.apiOf({ username: "dave", password: "dave-password" });
    expect((await dave("GET", "/api/v1/users/me")).body.username).toBe("dave");
    expectProblem(await dave("POST", "/api/v1/users", { body: { username: "eve", password: "eve-password" } }), 403);
    expectProblem(await dave("GET", "/api/v1/users"), 403);
  });

  test("a taken username is a 409; a short password, a bad name or an unknown role a 422", async () => {
    await createUser("frank");
    expectProblem(await t.api("POST", "/api/v1/users", { body: { username: "frank", password: "other-password" } }), 409);
    expectProblem(await t.api("POST", "/api/v1/users", { body: { username: "gina", password: "short" } }), 422);
    expectProblem(await t.api("POST", "/api/v1/users", { body: { username: "has space", password: "long-enough" } }), 422);
    expectProblem(
      await t.api("POST", "/api/v1/users", { body: { username: "hal", password: "long-enough", role: "root" } }),
      422,
    );
  });
});

describe("API tokens", () => {
  test("are shown once, authenticate as Bearer, are listed without the secret and can be revoked", async () => {
    const ivan = (await t.user("ivan")).api;
    const created = await ivan("POST", "/api/v1/tokens", { body: { name: "ci" } });
    expect(created.status).toBe(201);
    expect(created.body.token).toStartWith("cst_");
    const bearer = t.apiOf({ token: created.body.token });
    expect((await bearer("GET", "/api/v1/users/me")).body.username).toBe("ivan");

    const list = await ivan("GET", "/api/v1/tokens");
    expect(list.body.items).toContainEqual({
      id: created.body.id,
      name: "ci",
      created_at: created.body.created_at,
      expires_at: null,
    });
    expect(list.text).not.toContain(created.body.token);

    // Another user cannot revoke it.
    const judy = (await t.user("judy")).api;
    expectProblem(await judy("DELETE", `/api/v1/tokens/${created.body.id}`), 404);

    expect((await ivan("DELETE", `/api/v1/tokens/${created.body.id}`)).status).toBe(204);
    expectProblem(await bearer("GET", "/api/v1/users/me"), 401);
  });

  test("a token expires after expires_in_days; a connector made with a token belongs to the token's user", async () => {
    const kim = (await t.user("kim")).api;
    const token = (await kim("POST", "/api/v1/tokens", { body: { name: "agent", expires_in_days: 1 } })).body;
    expect(Date.parse(token.expires_at) - Date.parse(token.created_at)).toBe(86_400_000);
    const viaToken = t.apiOf({ token: token.token });
    const c = await viaToken("POST", "/api/v1/connectors", { body: { url: "https://kim.example/mcp" } });
    expect((await kim("GET", `/api/v1/connectors/${c.body.id}`)).status).toBe(200);
    t.clock.advance(86_400_000);
    const late = await viaToken("GET", "/api/v1/users/me");
    expectProblem(late, 401);
    expect(late.body.detail).toContain("expired");
  });

  test("the database holds only a digest of the token", async () => {
    const token = (await t.api("POST", "/api/v1/tokens", { body: { name: "digest" } })).body.token as string;
    const rows = await queryRows<{ token_digest: string }>(t.deps, sql`SELECT token_digest FROM api_tokens`);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.token_digest).not.toContain(token.slice(4, 20));
  });

  test("a password change is honoured at once, even for a remembered credential", async () => {
    const lee = await createUser("lee");
    expect((await lee.api("GET", "/api/v1/users/me")).status).toBe(200);
    // Change the password directly: the remembered Basic credential must stop working.
    const hash = await Bun.password.hash("a-new-password", "argon2id");
    await queryRows(t.deps, sql`UPDATE users SET password_hash = ${hash} WHERE id = ${lee.id}`);
    expectProblem(await lee.api("GET", "/api/v1/users/me"), 401);
    expect((await t.apiOf({ username: "lee", password: "a-new-password" })("GET", "/api/v1/users/me")).status).toBe(200);
  });
});

describe("guessing", () => {
  test("a client that fails AUTH__MAX_FAILURES times is refused with 429 and Retry-After until the window ends, before any password is checked", async () => {
    const app = await createTestApp({ env: { AUTH__MAX_FAILURES: "3", AUTH__FAILURE_WINDOW_SECONDS: "60" } });
    try {
      const guess = (password: string, client = "198.51.100.7") =>
        app.api("GET", "/api/v1/users/me", { as: { username: "admin", password }, headers: { "x-test-client": client } });
      for (const attempt of ["a", "b", "c"]) expectProblem(await guess(attempt), 401);
      // Even the right password is refused now: the limit is checked before any password is.
      const limited = await guess(app.admin.basic.password);
      expectProblem(limited, 429);
      expect(limited.headers.get("retry-after")).toBe("60");
      // Another client is not affected; a request without credentials is not a failure.
      expect((await guess(app.admin.basic.password, "198.51.100.8")).status).toBe(200);
      for (let i = 0; i < 5; i++)
        expectProblem(await app.api("GET", "/api/v1/users/me", { as: null, headers: { "x-test-client": "198.51.100.9" } }), 401);
      app.clock.advance(30_000);
      expect((await guess(app.admin.basic.password)).headers.get("retry-after")).toBe("30");
      app.clock.advance(30_000);
      expect((await guess(app.admin.basic.password)).status).toBe(200);
    } finally {
      app.close();
    }
  });

  test("a wrong current password in a password change counts too: a stolen token is no way to guess the password (and the token itself is never braked)", async () => {
    const app = await createTestApp({ env: { AUTH__MAX_FAILURES: "3", AUTH__FAILURE_WINDOW_SECONDS: "60" } });
    try {
      const token = (await app.api("POST", "/api/v1/tokens", { body: { name: "stolen" } })).body.token as string;
      const change = (current: string) =>
        app.api("PUT", "/api/v1/users/me/password", {
          as: { token },
          headers: { "x-test-client": "198.51.100.20" },
          body: { current_password: current, new_password: "a-brand-new-password" },
        });
      for (const attempt of ["a", "b", "c"]) expectProblem(await change(attempt), 422);
      // The right one is refused now, before it is checked; and so is that client's next password sign-in as admin.
      expectProblem(await change(app.admin.basic.password), 429);
      expectProblem(
        await app.api("GET", "/api/v1/users/me", { as: app.admin.basic, headers: { "x-test-client": "198.51.100.20" } }),
        429,
      );
      // The password did not change; the token goes on working.
      expect(
        (await app.api("GET", "/api/v1/users/me", { as: app.admin.basic, headers: { "x-test-client": "198.51.100.21" } })).status,
      ).toBe(200);
      expect(
        (await app.api("GET", "/api/v1/users/me", { as: { token }, headers: { "x-test-client": "198.51.100.20" } })).status,
      ).toBe(200);
    } finally {
      app.close();
    }
  });
});

describe("limits per user", () => {
  test("beyond AUTH__MAX_TOKENS_PER_USER a new token is a 409 naming the setting", async () => {
    const app = await createTestApp({ env: { AUTH__MAX_TOKENS_PER_USER: "2" } });
    try {
      const frida = await app.user("frida"); // the harness gave her one token already
      expect((await frida.api("POST", "/api/v1/tokens", { body: { name: "second" } })).status).toBe(201);
      const third = await frida.api("POST", "/api/v1/tokens", { body: { name: "third" } });
      expectProblem(third, 409);
      expect(third.body.detail).toContain("AUTH__MAX_TOKENS_PER_USER");
    } finally {
      app.close();
    }
  });
});
