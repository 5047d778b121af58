import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openSqliteStore } from "../../src/db/sqlite";
import { LEASE_POLL_MS } from "../../src/oauth-client/client";
import { refreshAt, retryAt } from "../../src/oauth-client/refresh-plan";
import { createOAuthRepository } from "../../src/oauth-client/repository";
import { authorizeInBrowser, startOidcProvider, type OidcPeer } from "../peers/oidc";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { storedGrant } from "../support/oauth";
import { finishCallback } from "../support/callback";

describe("when to refresh", () => {
  test("at 80 % of the lifetime or 60 s before expiry, whichever is first, never before half-life", () => {
    const hour = 3_600_000;
    expect(refreshAt(0, hour)).toBe(hour * 0.8); // 48 min < 59 min
    expect(refreshAt(0, 10 * hour)).toBe(10 * hour * 0.8);
    expect(refreshAt(0, 200_000)).toBe(140_000); // 60 s before (140 s) comes first, before 80 % (160 s)
    expect(refreshAt(0, 10_000)).toBe(5_000); // a 10 s token: at half-life, not at once
    expect(refreshAt(0, null)).toBeNull();
  });

  test("transient failures back off, never past the expiry", () => {
    expect(retryAt(0, 1, null)).toBe(5_000);
    expect(retryAt(0, 2, null)).toBe(10_000);
    expect(retryAt(0, 20, null)).toBe(300_000);
    expect(retryAt(0, 3, 12_000)).toBe(7_000);
  });
});

describe("leases", () => {
  test("only one process at a time holds a grant's refresh lease; an expired lease can be taken over; stale states go", async () => {
    const store = openSqliteStore(":memory:");
    store.sqlite
      .query("INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ('u', 'u', 'h', 'user', 0, 0)")
      .run();
    store.sqlite
      .query(
        "INSERT INTO connectors (id, owner_id, url, state, created_at, updated_at) VALUES ('c', 'u', 'https://x', 'connected', 0, 0)",
      )
      .run();
    const repository = createOAuthRepository(store);
    const context = {
      as: { issuer: "https://as.example" },
      client_id: "c",
      token_endpoint_auth_method: "none" as const,
      resource: "https://x",
      scope: null,
      redirect_uri: "https://cs/cb",
    };
    await repository.saveGrant({
      connector_id: "c",
      context,
      secrets: "s",
      expires_at: 100,
      refresh_at: 50,
      failures: 0,
      lease_owner: null,
      lease_until: null,
      updated_at: 0,
    });
    expect(await repository.dueGrants(60, 10)).toEqual(["c"]);
    expect(await repository.lease("c", "process-a", 60, 90)).toBe(true);
    expect(await repository.lease("c", "process-b", 61, 91)).toBe(false);
    expect(await repository.dueGrants(61, 10)).toEqual([]);
    expect(await repository.lease("c", "process-b", 95, 125)).toBe(true); // process-a's lease ran out
    await repository.release("c", "process-a"); // not its lease any more: nothing happens
    expect(await repository.lease("c", "process-a", 96, 126)).toBe(false);
    await repository.release("c", "process-b");
    expect(await repository.lease("c", "process-a", 97, 127)).toBe(true);

    // Stale pending authorizations are removed by the same loop.
    await repository.saveState({
      state_digest: "d",
      connector_id: "c",
      secrets: "s",
      context: { ...context, redirect_url: null },
      expires_at: 600_000,
      created_at: 0,
    });
    expect(await repository.deleteExpiredStates(599_999)).toBe(0);
    expect(await repository.deleteExpiredStates(600_000)).toBe(1);
    expect(await repository.takeState("d")).toBeUndefined();
    await store.close();
  });
});

describe("two processes, one grant", () => {
  test("a refresh while another process holds the lease waits for it and uses the token it stored, with no token request of its own", async () => {
    // The other process stores its new token while this one waits.
    let otherProcess = async () => {};
    const t = await createTestApp({ whileSleeping: () => otherProcess() });
    try {
      const id = (await t.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/mcp" } })).body.id as string;
      const grants = createOAuthRepository(t.deps.store);
      const context = {
        as: { issuer: "https://as.example", token_endpoint: "https://as.example/token" },
        client_id: "c",
        token_endpoint_auth_method: "none" as const,
        resource: "https://mcp.example/mcp",
        scope: null,
        redirect_uri: `${t.publicUrl}/cb`,
      };
      const now = t.clock.now();
      const store = (accessToken: string) =>
        grants.saveGrant({
          connector_id: id,
          context,
          secrets: t.deps.sealer.seal(
            JSON.stringify({ access_token: accessToken, refresh_token: "r", client_secret: null }),
            `oauth_grants/${id}`,
          ),
          expires_at: now + 3_600_000,
          refresh_at: now,
          failures: 0,
          lease_owner: null,
          lease_until: null,
          updated_at: now,
        });
      await store("old-token");
      expect(await grants.lease(id, "the-other-process", now, now + 30_000)).toBe(true);
      // It takes four looks (a slow token endpoint) before the other process has stored its tokens.
      let looks = 0;
      otherProcess = async () => void (++looks === 4 && (await store("the-other-process-s-token")));
      expect(await t.services.authorization.refresh(id)).toEqual({ ok: true, accessToken: "the-other-process-s-token" });
      expect(t.clock.now()).toBe(now + 4 * LEASE_POLL_MS); // it waited for the other process, not a fixed time
      expect(t.network.requests).toEqual([]);
    } finally {
      t.close();
    }
  });
});

describe("the authorization server goes away", () => {
  // oidc-provider for the authorization, then stopped; the service's clock is stepped through the token's hour. The
  // service reaches the peers over real sockets; the API and the callback are reached through `app.handle`.
  const clock = steppedClock(Date.now());
  let op: OidcPeer;
  let server: OAuthMcpServer;
  let t: TestApp;
  beforeAll(async () => {
    op = await startOidcProvider({ accessTokenTtl: 3600 });
    server = startOAuthMcpServer(op.issuer);
    t = await createTestApp({ clock, realNetwork: true });
  });
  afterAll(async () => {
    await t.close();
    await server.stop();
  });

  test("refresh failures retry with backoff while the token is valid, and end in disconnected with the reason once it expires", async () => {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: server.url } });
    const connect = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    await finishCallback(t, await authorizeInBrowser(connect.body.auth_request.authorization_url, op.issuer), t.admin.basic);
    const id = created.body.id as string;
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    const expiresAt = (await storedGrant(t, id))!.expires_at!;
    await op.stop();

    // Due at 80 % of the hour: the refresh fails (the server is unreachable: transient) and is retried later.
    clock.advance(0.81 * 3_600_000);
    await t.runJobs();
    expect((await storedGrant(t, id))!.failures).toBe(1);
    await t.runJobs(); // not due again yet: 5 s of backoff
    expect((await storedGrant(t, id))!.failures).toBe(1);
    clock.advance(5_000);
    await t.runJobs();
    expect((await storedGrant(t, id))!.failures).toBe(2);
    expect(clock.now()).toBeLessThan(expiresAt);
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");

    // Once the token has expired, a failed refresh disconnects, saying why.
    clock.advance(expiresAt - clock.now());
    await t.runJobs();
    const after = (await t.api("GET", `/api/v1/connectors/${id}`)).body;
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("OAuth token refresh failed");
    expect(after.disconnect_reason).toContain("could not be reached");
  });
});
