import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rate_buckets, rate_bucketsPg } from "../../src/rate-limits/table";
import { mailTools } from "../peers/mail-tools";
import { pagedToolsServer } from "../peers/paged-tools";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient, toolText } from "../support/mcp";
import { scrape } from "../metrics/scrape";

// Rate limits through app.handle with the stepped clock (both stores: TEST_STORE=postgres takes the shared buckets'
// path through the store): a tool's limit and its refill seen by the MCP SDK's own client, whose session goes on;
// the connector's limit and the user's (the default, an administrator's override) with 429 + Retry-After for what
// is not a call; the audit trail's rate_limited; the metrics per connector and tool.

type User = Awaited<ReturnType<TestApp["user"]>>;

/** A test app whose fake network serves `handler` at `origin`, and its user alice. */
async function appWith(origin: string, handler: (request: Request) => Promise<Response>, env: Record<string, string> = {}) {
  const t = await createTestApp({ env });
  t.network.serve(origin, handler);
  return { t, alice: await t.user("alice") };
}

/** One JSON-RPC request POSTed by hand to a proxy URL (a stateless server: no session needed). */
function post(t: TestApp, token: string, id: string, message: Record<string, unknown>) {
  return t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", ...message }),
    }),
  );
}
const ping = (t: TestApp, token: string, id: string, n: number) => post(t, token, id, { id: n, method: "ping" });
const call = (t: TestApp, token: string, id: string, n: number, name: string) =>
  post(t, token, id, { id: n, method: "tools/call", params: { name, arguments: {} } });

async function expectRateLimited(response: Response, retryAfter: string, detail: RegExp) {
  expect(response.status).toBe(429);
  expect(response.headers.get("content-type")).toStartWith("application/problem+json");
  expect(response.headers.get("retry-after")).toBe(retryAfter);
  const body = await response.json();
  expect(body.type).toEndWith("rate-limited");
  expect(body.detail).toMatch(detail);
}

describe("a connector's rate_limits in the API", () => {
  let t: TestApp;
  let alice: User;
  beforeAll(async () => void ({ t, alice } = await appWith("https://tools.example", pagedToolsServer(["alpha"]).handler)));
  afterAll(() => t.close());

  test("set at creation, read back, replaced and removed with PATCH; bad values are 422 problems that change nothing", async () => {
    const limits = { requests_per_minute: 600, tools: { send_email: 10 } };
    const created = await alice.api("POST", "/api/v1/connectors", {
      body: { url: "https://tools.example/mcp", rate_limits: limits },
    });
    expect(created.status).toBe(201);
    expect(created.body.rate_limits).toEqual(limits);
    const id = created.body.id;
    expect((await alice.api("GET", `/api/v1/connectors/${id}`)).body.rate_limits).toEqual(limits);
    const patched = await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { rate_limits: { tools: { search: 5 } } } });
    expect(patched.status).toBe(200);
    expect(patched.body.rate_limits).toEqual({ tools: { search: 5 } });
    for (const bad of [
      { requests_per_minute: 0 },
      { requests_per_minute: -1 },
      { requests_per_minute: 1.5 },
      { requests_per_minute: 1_000_001 },
      { tools: { send_email: 0 } },
      { tools: { send_email: "ten" } },
      { tools: { "": 5 } },
      { per_hour: 5 },
      "600",
      [],
    ]) {
      expectProblem(await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { rate_limits: bad } }), 422);
      expectProblem(
        await alice.api("POST", "/api/v1/connectors", { body: { url: "https://tools.example/mcp", rate_limits: bad } }),
        422,
      );
    }
    expect((await alice.api("GET", `/api/v1/connectors/${id}`)).body.rate_limits).toEqual({ tools: { search: 5 } });
    const removed = await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { rate_limits: null } });
    expect(removed.body.rate_limits).toBeNull();
  });
});

describe("a tool's limit, seen by the MCP SDK's client", () => {
  let t: TestApp;
  let alice: User;
  const mail = mailTools();
  beforeAll(async () => void ({ t, alice } = await appWith("https://mail.example", mail.fetch)));
  afterAll(() => t.close());

  test("past the limit a call is a tool result with isError naming the limit and the wait; the session goes on and the call succeeds after the refill", async () => {
    const id = await connectedConnector(alice.api, "https://mail.example/mcp");
    await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { rate_limits: { tools: { send_email: 2 } } } });
    const { client, transport } = await mcpClient(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, { token: alice.token }, t.fetch);
    const session = transport.sessionId;
    expect(session).toBeString();
    // The connect's own handshake was a session too.
    const sessions = mail.sessions.started;

    for (let i = 0; i < 2; i++)
      expect(toolText(await client.callTool({ name: "send_email", arguments: {} }))).toBe("called send_email");
    const refused = await client.callTool({ name: "send_email", arguments: {} });
    expect(refused.isError).toBe(true);
    // 2 a minute: one token every 30 s.
    expect(toolText(refused)).toBe(
      "Rate limit reached: the tool send_email may be called 2 times a minute through this connector (set by the connector's owner). Try again in 30 seconds.",
    );
    expect(mail.calls.get("send_email")).toBe(2);
    // Other tools, and the rest of the session, are not held back.
    expect(toolText(await client.callTool({ name: "search", arguments: {} }))).toBe("called search");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("send_email");

    t.clock.advance(29_000);
    expect((await client.callTool({ name: "send_email", arguments: {} })).isError).toBe(true);
    t.clock.advance(1_000);
    expect(toolText(await client.callTool({ name: "send_email", arguments: {} }))).toBe("called send_email");
    expect((await client.callTool({ name: "send_email", arguments: {} })).isError).toBe(true);
    expect(mail.calls.get("send_email")).toBe(3);
    // One session from first to last: the refusals never ended it.
    expect(transport.sessionId).toBe(session);
    expect(mail.sessions.started).toBe(sessions);

    // A full minute refills the whole bucket (a minute's worth), no more.
    t.clock.advance(120_000);
    for (let i = 0; i < 2; i++) expect((await client.callTool({ name: "send_email", arguments: {} })).isError).toBeFalsy();
    expect((await client.callTool({ name: "send_email", arguments: {} })).isError).toBe(true);
    await client.close();

    // The audit trail records each refusal as rate_limited, at the tool it named.
    const records = (await alice.api("GET", `/api/v1/audit?connector_id=${id}&outcome=rate_limited&limit=100`)).body.items;
    expect(records).toHaveLength(4);
    for (const record of records) expect(record).toMatchObject({ method: "tools/call", name: "send_email", http_status: 200 });
    const results = (await alice.api("GET", `/api/v1/audit?connector_id=${id}&method=tools/call&outcome=result&limit=100`)).body
      .items;
    expect(results).toHaveLength(6);

    // The metrics per connector and tool, and the refusals by limit.
    const { samples, text } = await scrape(t);
    const series = (name: string, tool: string) => samples.get(`${name}{connector="${id}",tool="${tool}"}`);
    expect(series("mcp_tool_calls_total", "send_email")).toBe(9);
    expect(series("mcp_tool_rate_limited_total", "send_email")).toBe(4);
    expect(series("mcp_tool_calls_total", "search")).toBe(1);
    expect(series("mcp_tool_errors_total", "send_email")).toBeUndefined();
    expect(samples.get(`mcp_tool_call_duration_seconds_count{connector="${id}",tool="send_email"}`)).toBe(5);
    expect(text).toContain(`mcp_tool_call_duration_seconds_bucket{connector="${id}",tool="send_email",le="+Inf"} 5`);
    expect(samples.get('mcp_rate_limited_total{limit="tool"}')).toBe(4);
    expect(samples.get('mcp_rate_limited_total{limit="user"}')).toBe(0);
  });
});

describe("a connector's limit on every request", () => {
  let t: TestApp;
  let alice: User;
  beforeAll(
    async () => void ({ t, alice } = await appWith("https://tools.example", pagedToolsServer(["alpha", "beta"]).handler)),
  );
  afterAll(() => t.close());

  test("past it: 429 rate-limited with Retry-After for a ping or a GET, a tool result for a call; a tool's limit takes nothing when another refuses", async () => {
    const id = await connectedConnector(alice.api, "https://tools.example/mcp");
    // 3 a minute: one every 20 s. alpha: 1 a minute.
    await alice.api("PATCH", `/api/v1/connectors/${id}`, {
      body: { rate_limits: { requests_per_minute: 3, tools: { alpha: 1 } } },
    });
    expect((await ping(t, alice.token, id, 1)).status).toBe(200);
    expect((await call(t, alice.token, id, 2, "alpha")).status).toBe(200);
    // alpha's bucket is empty: refused by it, this takes no token of the connector's.
    const byTool = await (await call(t, alice.token, id, 3, "alpha")).json();
    expect(byTool.result.isError).toBe(true);
    expect(byTool.result.content[0].text).toContain("Try again in 60 seconds");
    expect((await ping(t, alice.token, id, 4)).status).toBe(200);

    await expectRateLimited(await ping(t, alice.token, id, 5), "20", /this connector takes 3 MCP requests a minute/);
    const stream = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
        headers: { authorization: `Bearer ${alice.token}`, accept: "text/event-stream" },
      }),
    );
    await expectRateLimited(stream, "20", /set by the connector's owner/);
    // Ending a session is never refused (the stateless server answers its own 405).
    const ended = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${alice.token}`, "mcp-session-id": "s" },
      }),
    );
    expect(ended.status).not.toBe(429);
    const byConnector = await (await call(t, alice.token, id, 6, "beta")).json();
    expect(byConnector).toMatchObject({ id: 6, result: { isError: true } });
    expect(byConnector.result.content[0].text).toContain("this connector takes 3 MCP requests a minute");

    t.clock.advance(20_000);
    expect((await ping(t, alice.token, id, 7)).status).toBe(200);
    await expectRateLimited(await ping(t, alice.token, id, 8), "20", /connector/);

    const records = (await alice.api("GET", `/api/v1/audit?connector_id=${id}&outcome=rate_limited`)).body.items;
    expect(records.map((r: { method: string; http_status: number }) => [r.method, r.http_status])).toEqual([
      ["ping", 429],
      ["tools/call", 200],
      ["ping", 429],
      ["tools/call", 200],
    ]);
    const { samples } = await scrape(t);
    expect(samples.get('mcp_rate_limited_total{limit="connector"}')).toBe(4);
    expect(samples.get('mcp_rate_limited_total{limit="tool"}')).toBe(1);
    expect(samples.get('mcp_proxy_responses_total{status="429"}')).toBe(3);
  });
});

describe("the buckets' job", () => {
  let t: TestApp;
  let alice: User;
  beforeAll(async () => void ({ t, alice } = await appWith("https://tools.example", pagedToolsServer(["alpha"]).handler)));
  afterAll(() => t.close());

  test("forgets buckets that are full again (PostgreSQL: their rows); a forgotten bucket is a full one", async () => {
    const id = await connectedConnector(alice.api, "https://tools.example/mcp");
    await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { rate_limits: { requests_per_minute: 2 } } });
    const rows = async () => (await t.deps.store.db.select().from(t.deps.store.table(rate_buckets, rate_bucketsPg))).length;
    for (let i = 0; i < 2; i++) expect((await ping(t, alice.token, id, i)).status).toBe(200);
    await expectRateLimited(await ping(t, alice.token, id, 3), "30", /connector/);
    // Shared through the store on PostgreSQL; in this process's memory on SQLite.
    expect(await rows()).toBe(t.deps.store.dialect === "postgres" ? 1 : 0);
    await t.runJobs();
    expect(await rows()).toBe(t.deps.store.dialect === "postgres" ? 1 : 0);
    // Full a minute after its last token was taken, and forgotten a minute after that.
    t.clock.advance(121_000);
    await t.runJobs();
    expect(await rows()).toBe(0);
    for (let i = 0; i < 2; i++) expect((await ping(t, alice.token, id, 10 + i)).status).toBe(200);
    await expectRateLimited(await ping(t, alice.token, id, 13), "30", /connector/);
  });
});

describe("the per-user limit: RATE__USER_REQUESTS_PER_MINUTE and an administrator's override", () => {
  let t: TestApp;
  let alice: User;
  let bob: User;
  beforeAll(async () => {
    const env = { RATE__USER_REQUESTS_PER_MINUTE: "5", METRICS__TOOLS_PER_CONNECTOR: "1" };
    ({ t, alice } = await appWith("https://tools.example", pagedToolsServer(["alpha", "beta", "gamma"]).handler, env));
    bob = await t.user("bob");
  });
  afterAll(() => t.close());

  test("each user has a bucket of their own at the default; an administrator raises one user's, and only theirs", async () => {
    const mine = await connectedConnector(alice.api, "https://tools.example/mcp");
    const bobs = await connectedConnector(bob.api, "https://tools.example/mcp");
    for (let i = 0; i < 5; i++) expect((await ping(t, alice.token, mine, i)).status).toBe(200);
    // 5 a minute: one every 12 s.
    await expectRateLimited(
      await ping(t, alice.token, mine, 9),
      "12",
      /you may send 5 MCP requests a minute.*RATE__USER_REQUESTS_PER_MINUTE/,
    );
    const refused = await (await call(t, alice.token, mine, 10, "alpha")).json();
    expect(refused.result.isError).toBe(true);
    expect(bob.principal.id).not.toBe(alice.principal.id);
    expect((await ping(t, bob.token, bobs, 1)).status).toBe(200);

    // Only administrators set it; bad values are 422 problems.
    expectProblem(
      await alice.api("PATCH", `/api/v1/users/${alice.principal.id}`, { body: { rate_limits: { requests_per_minute: 1000 } } }),
      403,
    );
    for (const bad of [{ requests_per_minute: 0 }, { requests_per_minute: 2.5 }, { per_hour: 1 }, 10])
      expectProblem(await t.api("PATCH", `/api/v1/users/${alice.principal.id}`, { body: { rate_limits: bad } }), 422);
    const raised = await t.api("PATCH", `/api/v1/users/${alice.principal.id}`, {
      body: { rate_limits: { requests_per_minute: 10 } },
    });
    expect(raised.status).toBe(200);
    expect(raised.body.rate_limits).toEqual({ requests_per_minute: 10 });
    expect(
      (await t.api("GET", `/api/v1/users`)).body.items.find((u: { id: string }) => u.id === bob.principal.id).rate_limits,
    ).toBeNull();

    // The bucket carries over as time owed: at 10 a minute a token comes every 6 s (at 5, it took 12 s).
    t.clock.advance(6_000);
    expect((await ping(t, alice.token, mine, 11)).status).toBe(200);
    await expectRateLimited(
      await ping(t, alice.token, mine, 12),
      "6",
      /10 MCP requests a minute through this service \(set by an administrator, for you\)/,
    );
    // Bob is still at the default.
    for (let i = 0; i < 4; i++) expect((await ping(t, bob.token, bobs, 2 + i)).status).toBe(200);
    await expectRateLimited(await ping(t, bob.token, bobs, 9), "6", /5 MCP requests a minute/);

    // null: back to the default.
    const reset = await t.api("PATCH", `/api/v1/users/${alice.principal.id}`, { body: { rate_limits: null } });
    expect(reset.body.rate_limits).toBeNull();
    t.clock.advance(60_000);
    for (let i = 0; i < 5; i++) expect((await ping(t, alice.token, mine, 20 + i)).status).toBe(200);
    await expectRateLimited(await ping(t, alice.token, mine, 30), "12", /RATE__USER_REQUESTS_PER_MINUTE/);

    const { samples } = await scrape(t);
    expect(samples.get('mcp_rate_limited_total{limit="user"}')).toBe(5);
    // METRICS__TOOLS_PER_CONNECTOR=1: alpha has series of its own at this connector, the others are `other`.
    t.clock.advance(60_000);
    for (const name of ["alpha", "beta", "gamma"]) expect((await call(t, alice.token, mine, 40, name)).status).toBe(200);
    const after = (await scrape(t)).samples;
    expect(after.get(`mcp_tool_calls_total{connector="${mine}",tool="alpha"}`)).toBe(2);
    expect(after.get(`mcp_tool_calls_total{connector="${mine}",tool="other"}`)).toBe(2);
    expect(after.get(`mcp_tool_calls_total{connector="${mine}",tool="beta"}`)).toBeUndefined();
  });
});
