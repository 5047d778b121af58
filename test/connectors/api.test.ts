import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearerMcp } from "../peers/bearer-server";
import { createTestApp, type TestApp } from "../support/app";
import { expectProblem, type Api } from "../support/api";

// The SDK's MCP server behind an API key, reached through the fake network (no socket).
const UPSTREAM = "https://bearer.example/mcp";
let t: TestApp;
let alice: Api;
let aliceId: string;
let bob: Api;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve(UPSTREAM, bearerMcp("sk-live-123").handler);
  const user = await t.user("alice");
  alice = user.api;
  aliceId = user.principal.id;
  bob = (await t.user("bob")).api;
});
afterAll(() => t.close());

const create = (as: Api, body: Record<string, unknown>) => as("POST", "/api/v1/connectors", { body });

describe("create", () => {
  test("answers 201 with Location and the connector in state created", async () => {
    const res = await create(alice, { url: "https://mcp.example.com/mcp", metadata: { name: "Example" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/api/v1/connectors/${res.body.id}`);
    expect(res.body).toMatchObject({
      owner_id: aliceId,
      url: "https://mcp.example.com/mcp",
      state: "created",
      disconnect_reason: null,
      metadata: { name: "Example" },
      auth_request: null,
      preset: null,
      header_names: [],
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const got = await alice("GET", res.headers.get("location")!);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  test.each([
    ["ftp://example.com", "scheme"],
    ["not a url", "absolute URL"],
    ["https://user:pw@example.com/mcp", "credentials"],
    ["mcp+stdio://nothing-like-this", "preset"],
  ])("refuses url %p with 422 naming body.url", async (url, words) => {
    const res = await create(alice, { url });
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe("body.url");
    expect(res.body.detail).toContain(words);
  });

  test("refuses a wrong type, a missing url and an unknown field with 422 naming the field", async () => {
    for (const [body, field] of [
      [{ url: 42 }, "body.url"],
      [{}, "body.url"],
      [{ url: "https://a.example", match_preset: "yes" }, "body.match_preset"],
      [{ url: "https://a.example", colour: "red" }, "body.colour"],
    ] as const) {
      const res = await create(alice, body);
      expectProblem(res, 422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  test("malformed JSON is a 400 that says so", async () => {
    const res = await alice("POST", "/api/v1/connectors", { raw: '{"url": "https://a.example"' });
    expectProblem(res, 400);
    expect(res.body.detail).toContain("not valid JSON");
  });

  test("a body over API__MAX_BODY_BYTES (1 MiB) is a 413 naming that setting, declared length or not", async () => {
    const raw = JSON.stringify({ url: "https://a.example", metadata: { description: "x".repeat(1_100_000) } });
    const declared = await alice("POST", "/api/v1/connectors", { raw });
    expectProblem(declared, 413);
    expect(declared.body.detail).toContain("API__MAX_BODY_BYTES");
    const bytes = new TextEncoder().encode(raw);
    const streamed = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.admin.token}`, "content-type": "application/json" },
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < bytes.length; i += 65_536) controller.enqueue(bytes.slice(i, i + 65_536));
            controller.close();
          },
        }),
      }),
    );
    expect(streamed.status).toBe(413);
    expect((await streamed.json()).detail).toContain("API__MAX_BODY_BYTES");
  });
});

describe("authentication", () => {
  test("no credentials, a wrong password, an unknown user and a garbled header are 401 with a Basic challenge", async () => {
    for (const authorization of [
      undefined,
      "Basic " + btoa("alice:wrong"),
      "Basic " + btoa("nobody:x"),
      "Basic !!!",
      "Digest abc",
      "Bearer not-a-token",
    ]) {
      const res = await alice("GET", "/api/v1/connectors", { as: null, headers: authorization ? { authorization } : {} });
      expectProblem(res, 401);
      expect(res.headers.get("www-authenticate")).toContain('Basic realm="connector-service"');
    }
  });
});

describe("ownership", () => {
  test("another user's connector is a 404 for every route; the admin sees it", async () => {
    const { body: mine } = await create(alice, { url: "https://private.example/mcp" });
    for (const [method, path] of [
      ["GET", `/api/v1/connectors/${mine.id}`],
      ["DELETE", `/api/v1/connectors/${mine.id}`],
      ["POST", `/api/v1/connectors/${mine.id}/connect`],
      ["POST", `/api/v1/connectors/${mine.id}/disconnect`],
    ] as const) {
      const res = await bob(method, path, method === "POST" ? { body: { headers: { authorization: "Bearer x" } } } : {});
      expectProblem(res, 404);
    }
    const list = await bob("GET", "/api/v1/connectors");
    expect(list.body.items.map((c: { id: string }) => c.id)).not.toContain(mine.id);
    expect((await t.api("GET", `/api/v1/connectors/${mine.id}`)).status).toBe(200);
    const all = await t.api("GET", "/api/v1/connectors?limit=100");
    expect(all.body.items.map((c: { id: string }) => c.id)).toContain(mine.id);
  });

  test("an unknown id is a 404", async () => {
    expectProblem(await alice("GET", "/api/v1/connectors/00000000-0000-4000-8000-000000000000"), 404);
    expectProblem(await alice("GET", "/api/v1/connectors/not-an-id"), 404);
  });
});

describe("list", () => {
  test("newest first, paginated with limit and cursor, each item once", async () => {
    const carol = (await t.user("carol")).api;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await create(carol, { url: `https://s${i}.example/mcp` })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await carol("GET", `/api/v1/connectors?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.items.map((c: { id: string }) => c.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });

  test("bad limit and cursor are 422", async () => {
    expectProblem(await alice("GET", "/api/v1/connectors?limit=0"), 422);
    expectProblem(await alice("GET", "/api/v1/connectors?limit=101"), 422);
    expectProblem(await alice("GET", "/api/v1/connectors?cursor=garbage"), 422);
  });
});

describe("connect and disconnect", () => {
  test("connect with headers stores them (names only shown) and connects; disconnect says it was requested", async () => {
    const { body: c } = await create(alice, { url: UPSTREAM });
    const res = await alice("POST", `/api/v1/connectors/${c.id}/connect`, {
      body: { headers: { Authorization: "Bearer sk-live-123", "X-Api-Key": "k-456" } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: "connected", disconnect_reason: null, header_names: ["Authorization", "X-Api-Key"] });
    expect(res.text).not.toContain("sk-live-123");
    expect(res.text).not.toContain("k-456");

    const off = await alice("POST", `/api/v1/connectors/${c.id}/disconnect`);
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ state: "disconnected", header_names: [] });
    expect(off.body.disconnect_reason).toMatch(/request/i);
    expect((await alice("GET", `/api/v1/connectors/${c.id}`)).body.state).toBe("disconnected");
  });

  test("disconnect of a never-connected connector is a 409", async () => {
    const { body: c } = await create(alice, { url: "https://fresh.example/mcp" });
    const res = await alice("POST", `/api/v1/connectors/${c.id}/disconnect`);
    expectProblem(res, 409);
    expect(res.body.detail).toContain("never connected");
  });

  test("connect with a redirect_url to a foreign origin is a 422 naming it", async () => {
    const { body: c } = await create(alice, { url: "https://redirect.example/mcp" });
    const res = await alice("POST", `/api/v1/connectors/${c.id}/connect`, {
      body: { headers: { "x-key": "v" }, redirect_url: "https://evil.example/cb" },
    });
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe("body.redirect_url");
  });
});

describe("delete", () => {
  test("answers 204, then the connector is a 404 everywhere", async () => {
    const { body: c } = await create(alice, { url: "https://gone.example/mcp" });
    const res = await alice("DELETE", `/api/v1/connectors/${c.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expectProblem(await alice("GET", `/api/v1/connectors/${c.id}`), 404);
    expectProblem(await alice("DELETE", `/api/v1/connectors/${c.id}`), 404);
  });
});

describe("limits per user", () => {
  test("beyond CONNECTOR__MAX_PER_USER a create is a 409 naming the setting; deleting one makes room; others are not held back", async () => {
    const app = await createTestApp({ env: { CONNECTOR__MAX_PER_USER: "2" } });
    try {
      const erin = (await app.user("erin")).api;
      const first = await erin("POST", "/api/v1/connectors", { body: { url: "https://one.example/mcp" } });
      expect((await erin("POST", "/api/v1/connectors", { body: { url: "https://two.example/mcp" } })).status).toBe(201);
      const third = await erin("POST", "/api/v1/connectors", { body: { url: "https://three.example/mcp" } });
      expectProblem(third, 409);
      expect(third.body.detail).toContain("CONNECTOR__MAX_PER_USER");
      expect((await app.api("POST", "/api/v1/connectors", { body: { url: "https://admins.example/mcp" } })).status).toBe(201);
      await erin("DELETE", `/api/v1/connectors/${first.body.id}`);
      expect((await erin("POST", "/api/v1/connectors", { body: { url: "https://three.example/mcp" } })).status).toBe(201);
    } finally {
      app.close();
    }
  });
});
