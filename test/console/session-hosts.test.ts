import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem, readResponse } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// The console's session, through app.handle, where the console meets two new needs: it works at any name that reaches
// the service (opened at `localhost` while SERVER__PUBLIC_URL names 127.0.0.1), and its "Try it" speaks MCP at a
// proxy URL with the session — only from the console's own page (Sec-Fetch-Site: same-origin) with the CSRF token.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const PUBLIC = "http://127.0.0.1:8000";
const LOCAL = "http://localhost:8000";

beforeAll(async () => {
  t = await createTestApp({ publicUrl: PUBLIC });
  t.network.serve("https://open.example", scriptedServer().handler);
  alice = await t.user("alice");
});
afterAll(() => t.close());

type Session = { cookie: string; csrf: string; publicUrl: string };

async function signIn(at: string): Promise<Session> {
  const res = await t.handle(
    new Request(`${at}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: at, "sec-fetch-site": "same-origin" },
      body: JSON.stringify({ username: "alice", password: alice.basic.password }),
    }),
  );
  const body = await readResponse(res);
  if (res.status !== 201) throw new Error(`sign-in answered ${res.status}: ${body.text}`);
  return { cookie: res.headers.get("set-cookie")!.split(";")[0]!, csrf: body.body.csrf_token, publicUrl: body.body.public_url };
}

const send = (at: string, method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  t
    .handle(
      new Request(`${at}${path}`, {
        method,
        headers: { ...(body !== undefined && { "content-type": "application/json" }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    .then(readResponse);

describe("a console opened at another name of the service", () => {
  test("signs in, learns the public URL, and makes changes (its own origin, same-origin by Fetch Metadata)", async () => {
    const s = await signIn(LOCAL);
    expect(s.publicUrl).toBe(PUBLIC);
    const page = { cookie: s.cookie, "x-csrf-token": s.csrf, origin: LOCAL, "sec-fetch-site": "same-origin" };
    const created = await send(LOCAL, "POST", "/api/v1/connectors", page, { url: "https://open.example/mcp" });
    expect(created.status).toBe(201);
    const patched = await send(LOCAL, "PATCH", `/api/v1/connectors/${created.body.id}`, page, { metadata: { name: "x" } });
    expect(patched.status).toBe(200);
  });

  test("the cross-site rules hold: another origin, or an origin without the browser's same-origin word, is refused", async () => {
    const s = await signIn(LOCAL);
    const body = { url: "https://open.example/other" };
    const base = { cookie: s.cookie, "x-csrf-token": s.csrf };
    // Another site, as the browser says.
    expectProblem(
      await send(
        LOCAL,
        "POST",
        "/api/v1/connectors",
        { ...base, origin: "http://evil.example", "sec-fetch-site": "cross-site" },
        body,
      ),
      403,
    );
    // Another port of the same host is another site.
    expectProblem(
      await send(
        LOCAL,
        "POST",
        "/api/v1/connectors",
        { ...base, origin: "http://localhost:9999", "sec-fetch-site": "same-site" },
        body,
      ),
      403,
    );
    // No Fetch Metadata: only the public URL's origin is the service's own.
    expectProblem(await send(LOCAL, "POST", "/api/v1/connectors", { ...base, origin: "http://evil.example" }, body), 403);
    expectProblem(await send(LOCAL, "POST", "/api/v1/connectors", { ...base, origin: LOCAL }, body), 403);
    // The CSRF token is still wanted from the console's own page.
    expectProblem(
      await send(LOCAL, "POST", "/api/v1/connectors", { cookie: s.cookie, origin: LOCAL, "sec-fetch-site": "same-origin" }, body),
      403,
    );
  });
});

describe("the console's session at a proxy URL", () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "console", version: "1" } },
  };
  const mcpHeaders = { accept: "application/json, text/event-stream" };

  test("is taken from the console's page with the CSRF token, and audited as the person", async () => {
    const id = await connectedConnector(alice.api, "https://open.example/mcp");
    const s = await signIn(PUBLIC);
    const res = await send(
      PUBLIC,
      "POST",
      `/api/v1/connectors/${id}/mcp`,
      { ...mcpHeaders, cookie: s.cookie, "x-csrf-token": s.csrf, origin: PUBLIC, "sec-fetch-site": "same-origin" },
      initialize,
    );
    expect(res.status).toBe(200);
    // The audit trail may be written just after the answer: look until it is there.
    let records: { user_id: string; credential: string; method: string }[] = [];
    for (let i = 0; i < 50 && records.length === 0; i++) {
      records = (await alice.api("GET", `/api/v1/audit?connector_id=${id}`)).body.items;
      if (records.length === 0) await Bun.sleep(20);
    }
    expect(records[0]).toMatchObject({ user_id: alice.principal.id, credential: "session", method: "initialize" });
  });

  test("is no credential there otherwise: without the CSRF token, from another site, or from a program", async () => {
    const id = await connectedConnector(alice.api, "https://open.example/mcp");
    const s = await signIn(PUBLIC);
    const url = `/api/v1/connectors/${id}/mcp`;
    // A form or a link of the console's origin: no CSRF header, so no session (a 401, challenging for Bearer only).
    const noCsrf = await send(
      PUBLIC,
      "POST",
      url,
      { ...mcpHeaders, cookie: s.cookie, "sec-fetch-site": "same-origin", "sec-fetch-mode": "navigate" },
      initialize,
    );
    expectProblem(noCsrf, 401);
    expect(noCsrf.headers.get("www-authenticate")).not.toContain("Basic");
    // A page of another site that somehow had the cookie and the token (it cannot: SameSite=Strict, and the token is
    // the page's secret): still no session.
    const crossSite = {
      ...mcpHeaders,
      cookie: s.cookie,
      "x-csrf-token": s.csrf,
      origin: "http://evil.example",
      "sec-fetch-site": "cross-site",
    };
    expectProblem(await send(PUBLIC, "POST", url, crossSite, initialize), 401);
    // A program sends no Fetch Metadata: the cookie alone is not how programs sign in.
    expectProblem(await send(PUBLIC, "POST", url, { ...mcpHeaders, cookie: s.cookie, "x-csrf-token": s.csrf }, initialize), 401);
    // A wrong token from the console's page: refused outright.
    const forged = { ...mcpHeaders, cookie: s.cookie, "x-csrf-token": "forged", "sec-fetch-site": "same-origin" };
    expectProblem(await send(PUBLIC, "POST", url, forged, initialize), 403);
  });
});
