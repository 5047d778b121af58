import { expect, test } from "bun:test";
import { scriptedOAuth, type ScriptedOAuth } from "../peers/scripted-oauth";
import { createTestApp, type TestApp } from "../support/app";
import { finishCallback } from "../support/callback";
import { storedGrant } from "../support/oauth";
import { createOAuthRepository } from "../../src/oauth-client/repository";
import { logLines, scrape } from "./scrape";

// oauth_token_refreshes_total{outcome} and the log line of each refresh, through app.handle against the scripted
// authorization server (test/peers/scripted-oauth.ts), refreshed by the scheduler's job or by the proxy after a 401.
const HOUR = 3_600_000;

type Setup = {
  t: TestApp;
  oauth: ScriptedOAuth;
  id: string;
  ownerId: string;
  ownerToken: string;
  tokenEndpoint: { mode: "up" | "500" | "refused" };
};

/** A fresh app with a connector of alice's connected through the scripted authorization server. */
async function connected(options: Parameters<typeof createTestApp>[0] = {}): Promise<Setup> {
  const oauth = scriptedOAuth();
  const t = await createTestApp(options);
  const tokenEndpoint: Setup["tokenEndpoint"] = { mode: "up" };
  t.network.serve(oauth.as, (request) => {
    if (new URL(request.url).pathname !== "/token" || tokenEndpoint.mode === "up") return oauth.authorizationServer(request);
    if (tokenEndpoint.mode === "500") return new Response("upstream trouble", { status: 500 });
    // What fetch throws when nothing listens there any more.
    throw Object.assign(new TypeError(`fetch to ${request.url} failed`), { code: "ConnectionRefused" });
  });
  t.network.serve(oauth.mcp, oauth.mcpServer);
  const alice = await t.user("alice");
  const id = (await alice.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } })).body.id as string;
  const connect = await alice.api("POST", `/api/v1/connectors/${id}/connect`);
  await finishCallback(t, oauth.approve(connect.body.auth_request.authorization_url), alice.basic);
  expect((await alice.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
  return { t, oauth, id, ownerId: alice.principal.id, ownerToken: alice.token, tokenEndpoint };
}

const refreshes = async (t: TestApp) => {
  const { samples } = await scrape(t);
  return {
    ok: samples.get('oauth_token_refreshes_total{outcome="ok"}'),
    failed: samples.get('oauth_token_refreshes_total{outcome="failed"}'),
    invalid_grant: samples.get('oauth_token_refreshes_total{outcome="invalid_grant"}'),
  };
};

/** Every secret of the flow the test can see: codes, verifiers, access and refresh tokens, the owner's API token. */
async function secretsOf(s: Setup): Promise<string[]> {
  const grant = await storedGrant(s.t, s.id);
  const sent = s.oauth.seen.tokenRequests.flatMap((form) =>
    ["code", "code_verifier", "refresh_token"].map((name) => form.get(name)),
  );
  return [...sent, ...s.oauth.seen.mcpAuthorizations, grant?.access_token, grant?.refresh_token, s.ownerToken].filter(
    (v): v is string => !!v,
  );
}
async function expectNoSecretsLogged(s: Setup) {
  const secrets = await secretsOf(s);
  expect(secrets.length).toBeGreaterThan(3);
  const logged = s.t.logs.join("\n");
  expect(secrets.filter((secret) => logged.includes(secret))).toEqual([]);
}

const proxyPing = (s: Setup) =>
  s.t.handle(
    new Request(`${s.t.publicUrl}/api/v1/connectors/${s.id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${s.t.admin.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    }),
  );

test("every outcome's series is there at 0 before the first refresh; the code exchange is not a refresh", async () => {
  const s = await connected();
  try {
    expect(await refreshes(s.t)).toEqual({ ok: 0, failed: 0, invalid_grant: 0 });
    const { text } = await scrape(s.t);
    expect(text).toContain("# TYPE oauth_token_refreshes_total counter");
  } finally {
    await s.t.close();
  }
});

test("a refresh by the scheduler that gets new tokens counts once as ok and logs it at info, with the connector and its owner", async () => {
  const s = await connected();
  try {
    s.t.clock.advance(0.81 * HOUR);
    await s.t.runJobs();
    expect(s.oauth.seen.tokenRequests.filter((f) => f.get("grant_type") === "refresh_token")).toHaveLength(1);
    expect(await refreshes(s.t)).toEqual({ ok: 1, failed: 0, invalid_grant: 0 });
    const lines = logLines(s.t, "OAuth token refreshed");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "info",
      component: "oauth",
      connector_id: s.id,
      owner_id: s.ownerId,
      outcome: "ok",
      expires_in_seconds: 3600,
    });
    // Not due again yet: no second attempt, nothing more counted.
    await s.t.runJobs();
    expect((await refreshes(s.t)).ok).toBe(1);
    await expectNoSecretsLogged(s);
  } finally {
    await s.t.close();
  }
});

test("a token endpoint answering 500 counts as failed and logs a warning; the connector stays connected while its token is valid", async () => {
  const s = await connected();
  try {
    s.tokenEndpoint.mode = "500";
    s.t.clock.advance(0.81 * HOUR);
    await s.t.runJobs();
    expect(await refreshes(s.t)).toEqual({ ok: 0, failed: 1, invalid_grant: 0 });
    const [line, ...more] = logLines(s.t, "OAuth token refresh failed");
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      level: "warn",
      connector_id: s.id,
      owner_id: s.ownerId,
      outcome: "failed",
      permanent: false,
      expired: false,
    });
    expect(String(line!.reason)).toContain("not valid OAuth");
    expect((await s.t.api("GET", `/api/v1/connectors/${s.id}`)).body.state).toBe("connected");

    // The retry after the backoff succeeds: one more attempt, counted as ok.
    s.tokenEndpoint.mode = "up";
    s.t.clock.advance(5_000);
    await s.t.runJobs();
    expect(await refreshes(s.t)).toEqual({ ok: 1, failed: 1, invalid_grant: 0 });
    await expectNoSecretsLogged(s);
  } finally {
    await s.t.close();
  }
});

test("an unreachable authorization server counts as failed, with the reason in the warning", async () => {
  const s = await connected();
  try {
    s.tokenEndpoint.mode = "refused";
    s.t.clock.advance(0.81 * HOUR);
    await s.t.runJobs();
    expect(await refreshes(s.t)).toEqual({ ok: 0, failed: 1, invalid_grant: 0 });
    const [line] = logLines(s.t, "OAuth token refresh failed");
    expect(line).toMatchObject({ level: "warn", connector_id: s.id, owner_id: s.ownerId, outcome: "failed" });
    expect(String(line!.reason)).toContain("could not be reached");
    await expectNoSecretsLogged(s);
  } finally {
    await s.t.close();
  }
});

test("invalid_grant counts as invalid_grant (not failed), logs a warning and disconnects the connector", async () => {
  const s = await connected();
  try {
    s.oauth.state.tokenError = "invalid_grant";
    s.t.clock.advance(0.81 * HOUR);
    await s.t.runJobs();
    expect(await refreshes(s.t)).toEqual({ ok: 0, failed: 0, invalid_grant: 1 });
    expect(logLines(s.t, "OAuth token refresh failed")).toEqual([]);
    const lines = logLines(s.t, "OAuth token refresh refused (invalid_grant)");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "warn",
      connector_id: s.id,
      owner_id: s.ownerId,
      outcome: "invalid_grant",
      permanent: true,
    });
    expect((await s.t.api("GET", `/api/v1/connectors/${s.id}`)).body.state).toBe("disconnected");
    await expectNoSecretsLogged(s);
  } finally {
    await s.t.close();
  }
});

test("the proxy's refresh after an upstream 401 counts once for requests that share it, and every client gets its 200", async () => {
  const s = await connected();
  try {
    s.oauth.expireAccessTokens();
    const answers = await Promise.all([proxyPing(s), proxyPing(s), proxyPing(s)]);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(s.oauth.seen.tokenRequests.filter((f) => f.get("grant_type") === "refresh_token")).toHaveLength(1);
    expect(await refreshes(s.t)).toEqual({ ok: 1, failed: 0, invalid_grant: 0 });
    expect(logLines(s.t, "OAuth token refreshed")).toHaveLength(1);
    expect(logLines(s.t, "OAuth token refreshed")[0]).toMatchObject({ connector_id: s.id, owner_id: s.ownerId });
    await expectNoSecretsLogged(s);
  } finally {
    await s.t.close();
  }
});

test("the proxy's refresh refused with invalid_grant: counted once, and the client's 502 is counted as what it got", async () => {
  const s = await connected();
  try {
    s.oauth.expireAccessTokens();
    s.oauth.state.tokenError = "invalid_grant";
    expect((await proxyPing(s)).status).toBe(502);
    const { samples } = await scrape(s.t);
    expect(samples.get('oauth_token_refreshes_total{outcome="invalid_grant"}')).toBe(1);
    expect(samples.get('mcp_proxy_responses_total{status="502"}')).toBe(1);
    // What the upstream said, both times: 401.
    expect(samples.get('mcp_proxy_requests_total{status="401"}')).toBe(1);
    expect(logLines(s.t, "OAuth token refresh refused (invalid_grant)")).toHaveLength(1);
    await expectNoSecretsLogged(s);
  } finally {
    await s.t.close();
  }
});

test("waiting for another process's refresh is not an attempt of this one: nothing counted, nothing logged", async () => {
  let otherProcess = async () => {};
  const s = await connected({ whileSleeping: () => otherProcess() });
  try {
    const grants = createOAuthRepository(s.t.deps.store);
    const now = s.t.clock.now();
    expect(await grants.lease(s.id, "the-other-process", now, now + 30_000)).toBe(true);
    const row = (await grants.findGrant(s.id))!;
    // The other process stores its new tokens while this one waits.
    otherProcess = async () =>
      void (await grants.saveGrant({
        ...row,
        secrets: s.t.deps.sealer.seal(
          JSON.stringify({ access_token: "the-other-process-s-token", refresh_token: "r2", client_secret: null }),
          `oauth_grants/${s.id}`,
        ),
        updated_at: s.t.clock.now(),
      }));
    expect(await s.t.services.authorization.refresh(s.id)).toEqual({ ok: true, accessToken: "the-other-process-s-token" });
    expect(await refreshes(s.t)).toEqual({ ok: 0, failed: 0, invalid_grant: 0 });
    expect(logLines(s.t, "OAuth token refreshed")).toEqual([]);
  } finally {
    await s.t.close();
  }
});
