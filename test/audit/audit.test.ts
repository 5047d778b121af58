import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { sql } from "drizzle-orm";
import { createAuditRepository, type AuditRow } from "../../src/audit/repository";
import { pagedToolsServer } from "../peers/paged-tools";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { queryRows } from "../support/store";

// The audit trail, through app.handle with the MCP SDK's client: one record per message, the right outcome, never an
// argument (unless capture is on, and then sealed at rest), filters and pages, retention, and a burst that loses none.
const SECRET_ARGUMENT = "the-argument-nobody-may-read";

async function sdkClient(t: TestApp, token: string, id: string) {
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${token}`);
    return t.handle(request);
  };
  const mcp = new Client({ name: "audit-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${t.publicUrl}/api/v1/connectors/${id}/mcp`), { fetch: fetchFn }));
  return mcp;
}

const rawRows = (t: TestApp) => queryRows<AuditRow>(t.deps, sql`SELECT * FROM audit_records ORDER BY id`);

describe("with audit on (the default)", () => {
  let t: TestApp;
  let alice: Awaited<ReturnType<TestApp["user"]>>;
  let bob: Awaited<ReturnType<TestApp["user"]>>;
  let tools: string;
  let bare: string;
  beforeAll(async () => {
    t = await createTestApp();
    t.network.serve("https://tools.example", pagedToolsServer(["lookup"], 10).handler);
    t.network.serve("https://bare.example", scriptedServer().handler);
    alice = await t.user("alice");
    bob = await t.user("bob");
    tools = await connectedConnector(alice.api, "https://tools.example/mcp");
    bare = await connectedConnector(alice.api, "https://bare.example/mcp");
  });
  afterAll(() => t.close());

  test("N calls make N records with their outcome, the tool's name and the credential, and no argument anywhere", async () => {
    const mcp = await sdkClient(t, alice.token, tools);
    for (let i = 0; i < 3; i++) await mcp.callTool({ name: "lookup", arguments: { query: SECRET_ARGUMENT } });
    await mcp.close();
    // The scripted server has no tools: its answer to a call is a JSON-RPC error.
    const other = await sdkClient(t, alice.token, bare);
    await expect(other.callTool({ name: "missing", arguments: { query: SECRET_ARGUMENT } })).rejects.toThrow();
    await other.close();

    const page = await alice.api("GET", `/api/v1/audit?connector_id=${tools}&method=tools/call`);
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(3);
    for (const record of page.body.items) {
      expect(record).toMatchObject({
        user_id: alice.principal.id,
        connector_id: tools,
        virtual_server_id: null,
        method: "tools/call",
        name: "lookup",
        outcome: "result",
        error_code: null,
        http_status: 200,
        captured: null,
      });
      expect(record.credential).toStartWith("token:");
      expect(record.request_bytes).toBeGreaterThan(0);
      expect(record.response_bytes).toBeGreaterThan(0);
    }
    const failed = (await alice.api("GET", `/api/v1/audit?connector_id=${bare}&method=tools/call`)).body.items;
    expect(failed).toMatchObject([{ name: "missing", outcome: "error" }]);
    expect(typeof failed[0].error_code).toBe("number");
    // Every message of the session is there (initialize, the initialized notification, the calls …).
    const methods = (await alice.api("GET", `/api/v1/audit?connector_id=${tools}&limit=100`)).body.items.map(
      (r: { method: string }) => r.method,
    );
    expect(methods).toContain("initialize");
    expect(methods).toContain("notifications/initialized");
    expect(JSON.stringify(await rawRows(t))).not.toContain(SECRET_ARGUMENT);
  });

  test("filters combine; pages follow the cursor, newest first; a user sees only their own", async () => {
    const mcp = await sdkClient(t, alice.token, tools);
    for (let i = 0; i < 5; i++) await mcp.callTool({ name: "lookup", arguments: {} });
    await mcp.close();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await alice.api(
        "GET",
        `/api/v1/audit?method=tools/call&connector_id=${tools}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items.map((r: { id: string }) => r.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(new Set(seen).size).toBe(seen.length);

    const future = new Date(t.clock.now() + 60_000).toISOString();
    expect((await alice.api("GET", `/api/v1/audit?since=${future}`)).body.items).toEqual([]);
    expect((await alice.api("GET", `/api/v1/audit?until=${future}&limit=1`)).body.items).toHaveLength(1);
    expectProblem(await alice.api("GET", "/api/v1/audit?since=yesterday"), 422);

    expect((await bob.api("GET", "/api/v1/audit")).body.items).toEqual([]);
    expectProblem(await bob.api("GET", `/api/v1/audit?user_id=${alice.principal.id}`), 404);
    expect((await t.api("GET", `/api/v1/audit?user_id=${alice.principal.id}&limit=1`)).body.items).toHaveLength(1);
  });

  test("a 2026-07-28 request is recorded as its body says, which its Mcp-Method and Mcp-Name headers repeat", async () => {
    const res = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${tools}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${alice.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-method": "tools/call",
          "mcp-name": "lookup",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: "h-1",
          method: "tools/call",
          params: { name: "lookup", arguments: { query: SECRET_ARGUMENT } },
        }),
      }),
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("called lookup");
    const [record] = (await alice.api("GET", `/api/v1/audit?connector_id=${tools}&method=tools/call&limit=1`)).body.items;
    expect(record).toMatchObject({ method: "tools/call", name: "lookup", outcome: "result", http_status: 200 });
  });

  test("an upstream that cannot be reached is recorded by the HTTP status the client got", async () => {
    t.network.remove("https://bare.example");
    const res = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${bare}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${alice.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
      }),
    );
    expect(res.status).toBe(502);
    const [record] = (await alice.api("GET", `/api/v1/audit?connector_id=${bare}&method=ping`)).body.items;
    expect(record).toMatchObject({ outcome: "http", http_status: 502, error_code: null });
    t.network.serve("https://bare.example", scriptedServer().handler);
  });

  test("a burst of 10,000 messages: 10,000 records", async () => {
    const before = Number(
      (await queryRows<{ n: number }>(t.deps, sql`SELECT count(*) AS n FROM audit_records WHERE method = 'ping'`))[0]!.n,
    );
    const ping = (i: number) =>
      t
        .handle(
          new Request(`${t.publicUrl}/api/v1/connectors/${tools}/mcp`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${alice.token}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
            },
            body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "ping" }),
          }),
        )
        .then((r) => r.text());
    for (let batch = 0; batch < 100; batch++) await Promise.all(Array.from({ length: 100 }, (_, i) => ping(batch * 100 + i)));
    await t.services.audit.flush();
    const after = Number(
      (await queryRows<{ n: number }>(t.deps, sql`SELECT count(*) AS n FROM audit_records WHERE method = 'ping'`))[0]!.n,
    );
    expect(after - before).toBe(10_000);
  }, 60_000);

  test("retention: records older than AUDIT__RETENTION_DAYS go, and beyond AUDIT__MAX_RECORDS the oldest", async () => {
    const repository = createAuditRepository(t.deps.store);
    const row = (n: number): AuditRow => ({
      id: `00000000-0000-7000-8000-${String(n).padStart(12, "0")}`,
      at: t.clock.now() - 31 * 86_400_000,
      user_id: alice.principal.id,
      credential: null,
      connector_id: tools,
      virtual_server_id: null,
      method: "old/method",
      name: null,
      outcome: "result",
      error_code: null,
      http_status: 200,
      duration_ms: 1,
      request_bytes: 1,
      response_bytes: 1,
      captured: null,
    });
    await repository.insertMany(Array.from({ length: 10 }, (_, n) => row(n)));
    await t.runJobs();
    expect((await alice.api("GET", "/api/v1/audit?method=old/method")).body.items).toEqual([]);
    // Beyond the count (the newest kept): trimmed to exactly the maximum.
    await repository.insertMany(Array.from({ length: 10 }, (_, n) => ({ ...row(n), at: t.clock.now() })));
    const total = Number((await queryRows<{ n: number }>(t.deps, sql`SELECT count(*) AS n FROM audit_records`))[0]!.n);
    expect(await repository.trimTo(total - 4)).toBe(4);
    const left = (await rawRows(t)).map((r) => r.id);
    expect(left).not.toContain(row(3).id);
    expect(left).toContain(row(4).id);
  });

  test("a batch is written whole, a hundred rows per statement and the rest one by one, every value as given; again, nothing doubles", async () => {
    const repository = createAuditRepository(t.deps.store);
    const rows: AuditRow[] = Array.from({ length: 205 }, (_, n) => ({
      id: `00000000-0000-7000-9000-${String(n).padStart(12, "0")}`,
      at: t.clock.now() + n,
      user_id: alice.principal.id,
      credential: n % 2 ? `token:${n}` : null,
      connector_id: tools,
      virtual_server_id: n % 4 ? null : `virtual-${n}`,
      method: "bulk/method",
      name: n % 3 ? `tool-${n}` : null,
      outcome: n % 5 ? "result" : "error",
      error_code: n % 5 ? null : -32000 - n,
      http_status: 200 + (n % 7),
      duration_ms: n,
      request_bytes: 10 * n,
      response_bytes: 100 * n,
      captured: null,
    }));
    await repository.insertMany(rows);
    await repository.insertMany(rows.slice(150)); // a retried batch
    const stored = (await rawRows(t)).filter((r) => r.method === "bulk/method");
    // A raw read: PostgreSQL's bigint columns come back as strings.
    const numbers = (r: AuditRow) => ({
      ...r,
      at: Number(r.at),
      request_bytes: Number(r.request_bytes),
      response_bytes: Number(r.response_bytes),
      duration_ms: Number(r.duration_ms),
    });
    expect(stored.map(numbers)).toEqual(rows);
  });
});

describe("with AUDIT__CAPTURE=arguments", () => {
  test("arguments and results are kept, sealed at rest, shown to their user", async () => {
    const t = await createTestApp({ env: { AUDIT__CAPTURE: "arguments" } });
    try {
      t.network.serve("https://tools.example", pagedToolsServer(["lookup"], 10).handler);
      const carol = await t.user("carol");
      const id = await connectedConnector(carol.api, "https://tools.example/mcp");
      const mcp = await sdkClient(t, carol.token, id);
      await mcp.callTool({ name: "lookup", arguments: { query: SECRET_ARGUMENT } });
      await mcp.close();
      const [record] = (await carol.api("GET", "/api/v1/audit?method=tools/call")).body.items;
      expect(record.captured).toEqual({
        arguments: { query: SECRET_ARGUMENT },
        result: { content: [{ type: "text", text: "called lookup" }] },
      });
      const raw = await rawRows(t);
      expect(raw.some((r) => r.captured !== null)).toBe(true);
      expect(JSON.stringify(raw)).not.toContain(SECRET_ARGUMENT);
    } finally {
      await t.close();
    }
  });
});

describe("with AUDIT__ENABLED=false", () => {
  test("nothing is recorded", async () => {
    const t = await createTestApp({ env: { AUDIT__ENABLED: "false" } });
    try {
      t.network.serve("https://tools.example", pagedToolsServer(["lookup"], 10).handler);
      const dave = await t.user("dave");
      const id = await connectedConnector(dave.api, "https://tools.example/mcp");
      const mcp = await sdkClient(t, dave.token, id);
      await mcp.callTool({ name: "lookup", arguments: {} });
      await mcp.close();
      expect((await dave.api("GET", "/api/v1/audit")).body.items).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
