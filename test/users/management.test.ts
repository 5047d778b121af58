import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { finishCallback } from "../support/callback";
import { connectedConnector } from "../support/mcp";
import { waitFor } from "../support/wait";

// What administrators do with users, through app.handle: read, disable and enable, change roles, reset passwords,
// delete a user with everything they own.
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
});
afterAll(() => t.close());

describe("disabling a user", () => {
  test("refuses their password and tokens at once; enabling lets them back in", async () => {
    const carol = await t.user("carol");
    expect((await carol.api("GET", "/api/v1/users/me")).status).toBe(200);
    expect((await carol.api("GET", "/api/v1/users/me", { as: carol.basic })).status).toBe(200);

    const disabled = await t.api("PATCH", `/api/v1/users/${carol.principal.id}`, { body: { disabled: true } });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ username: "carol", disabled: true });
    expectProblem(await carol.api("GET", "/api/v1/users/me"), 401);
    expectProblem(await carol.api("GET", "/api/v1/users/me", { as: carol.basic }), 401);
    expect(
      (await t.api("GET", "/api/v1/users")).body.items.find((u: { username: string }) => u.username === "carol").disabled,
    ).toBe(true);

    expect((await t.api("PATCH", `/api/v1/users/${carol.principal.id}`, { body: { disabled: false } })).body.disabled).toBe(
      false,
    );
    expect((await carol.api("GET", "/api/v1/users/me")).status).toBe(200);
  });

  test("administrators only, never themselves, and a body that says something", async () => {
    const dave = await t.user("dave");
    expectProblem(await dave.api("PATCH", `/api/v1/users/${t.admin.principal.id}`, { body: { disabled: true } }), 403);
    expectProblem(await t.api("PATCH", `/api/v1/users/${t.admin.principal.id}`, { body: { disabled: true } }), 409);
    expectProblem(await t.api("PATCH", `/api/v1/users/${t.admin.principal.id}`, { body: { role: "user" } }), 409);
    expectProblem(await t.api("PATCH", `/api/v1/users/${dave.principal.id}`, { body: {} }), 422);
    expectProblem(await t.api("PATCH", `/api/v1/users/${dave.principal.id}`, { body: { disabled: "yes" } }), 422);
    expectProblem(await t.api("PATCH", `/api/v1/users/${crypto.randomUUID()}`, { body: { disabled: true } }), 404);
    const promoted = await t.api("PATCH", `/api/v1/users/${dave.principal.id}`, { body: { role: "admin" } });
    expect(promoted.body.role).toBe("admin");
    expect((await dave.api("GET", "/api/v1/users")).status).toBe(200);
  });
});

describe("creating a user", () => {
  test("without a role makes a user, never an administrator", async () => {
    const created = await t.api("POST", "/api/v1/users", { body: { username: "ivy", password: "ivy-password" } });
    expect(created.status).toBe(201);
    expect(created.body.role).toBe("user");
    expectProblem(await t.apiOf({ username: "ivy", password: "ivy-password" })("GET", "/api/v1/users"), 403);
  });
});

describe("reading users", () => {
  test("administrators read anyone; a user reads only themself", async () => {
    const erin = await t.user("erin");
    const frank = await t.user("frank");
    expect((await t.api("GET", `/api/v1/users/${erin.principal.id}`)).body.username).toBe("erin");
    expect((await erin.api("GET", `/api/v1/users/${erin.principal.id}`)).body.username).toBe("erin");
    expectProblem(await erin.api("GET", `/api/v1/users/${frank.principal.id}`), 404);
  });
});

describe("resetting a password", () => {
  test("the old one stops, the new one works; only administrators", async () => {
    const gina = await t.user("gina");
    expectProblem(
      await gina.api("POST", `/api/v1/users/${gina.principal.id}/password`, { body: { new_password: "self-service-no" } }),
      403,
    );
    expectProblem(await t.api("POST", `/api/v1/users/${gina.principal.id}/password`, { body: { new_password: "short" } }), 422);
    expect(
      (await t.api("POST", `/api/v1/users/${gina.principal.id}/password`, { body: { new_password: "reset-by-admin" } })).status,
    ).toBe(200);
    expectProblem(await gina.api("GET", "/api/v1/users/me", { as: gina.basic }), 401);
    expect((await gina.api("GET", "/api/v1/users/me", { as: { username: "gina", password: "reset-by-admin" } })).status).toBe(
      200,
    );
  });
});

describe("deleting a user", () => {
  test("takes their connectors, tokens and grants with them; not oneself", async () => {
    const hank = await t.user("hank");
    const id = await connectedConnector(hank.api, "https://mcp.example/hank");
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).status).toBe(200);
    expectProblem(await hank.api("DELETE", `/api/v1/users/${hank.principal.id}`), 403);
    expectProblem(await t.api("DELETE", `/api/v1/users/${t.admin.principal.id}`), 409);

    expect((await t.api("DELETE", `/api/v1/users/${hank.principal.id}`)).status).toBe(204);
    expectProblem(await t.api("GET", `/api/v1/connectors/${id}`), 404);
    expectProblem(await hank.api("GET", "/api/v1/users/me"), 401);
    expect((await t.api("GET", "/api/v1/users")).body.items.map((u: { username: string }) => u.username)).not.toContain("hank");
    expectProblem(await t.api("DELETE", `/api/v1/users/${hank.principal.id}`), 404);
  });

  test("revokes their OAuth connectors' grants upstream, as DELETE of each would, past the first page of connectors", async () => {
    const oauth = scriptedOAuth({ as: "https://as.jude.example", mcp: "https://mcp.jude.example" });
    t.network.serve(oauth.as, oauth.authorizationServer);
    t.network.serve(oauth.mcp, oauth.mcpServer);
    const jude = await t.user("jude");
    const created = await jude.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } });
    const connect = await jude.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
    expect(connect.body.state).toBe("auth_required");
    await finishCallback(t, oauth.approve(connect.body.auth_request.authorization_url), jude.basic);
    expect((await jude.api("GET", `/api/v1/connectors/${created.body.id}`)).body.state).toBe("connected");
    // Newer connectors come first: the OAuth one is on the second page of fifty.
    const ids: string[] = [created.body.id];
    for (let i = 0; i < 60; i++) {
      const more = await jude.api("POST", "/api/v1/connectors", { body: { url: `https://mcp.example/jude-${i}` } });
      expect(more.status).toBe(201);
      ids.push(more.body.id);
    }
    const revokedBefore = oauth.seen.revoked.length;

    expect((await t.api("DELETE", `/api/v1/users/${jude.principal.id}`)).status).toBe(204);
    await waitFor("the refresh and access tokens revoked", () => oauth.seen.revoked.length - revokedBefore >= 2, 5_000);
    for (const id of ids) expectProblem(await t.api("GET", `/api/v1/connectors/${id}`), 404);
  });
});
