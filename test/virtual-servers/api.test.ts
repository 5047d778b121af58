import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createConnectorRepository } from "../../src/connectors/repository";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { expectProblem, type Api } from "../support/api";

// The virtual server resource through app.handle (docs/interface.md §9.1), on the store TEST_STORE names.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
});
afterAll(() => t.close());

let users = 0;
/** A fresh user each: the per-user limit and the listings stay each test's own. */
const someone = () => t.user(`user-${++users}`);

const connector = async (as: Api, name?: string, url = "https://mcp.example/mcp") => {
  const res = await as("POST", "/api/v1/connectors", { body: { url, ...(name !== undefined && { metadata: { name } }) } });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
const create = (as: Api, body: Record<string, unknown>) => as("POST", "/api/v1/virtual-servers", { body });

beforeAll(async () => {
  alice = await t.user("alice");
  bob = await t.user("bob");
});

describe("create and read", () => {
  test("201 with Location, defaults, members with their state and status, conflicts [], the MCP URL", async () => {
    const github = await connector(alice.api, "GitHub (work)");
    const linear = await connector(alice.api, "Linear");
    expect((await alice.api("POST", `/api/v1/connectors/${linear}/connect`, { body: {} })).body.state).toBe("connected");
    const res = await create(alice.api, {
      name: "Engineering",
      members: [{ connector_id: github }, { connector_id: linear, prefix: "lin" }],
    });
    expect(res.status).toBe(201);
    const id = res.body.id;
    expect(res.headers.get("location")).toBe(`/api/v1/virtual-servers/${id}`);
    expect(res.body).toEqual({
      id,
      name: "Engineering",
      description: null,
      members: [
        {
          connector_id: github,
          prefix: "github-work",
          state: "created",
          status: "unavailable",
          reason: "The connector was never connected",
        },
        { connector_id: linear, prefix: "lin", state: "connected", status: "ok", reason: null },
      ],
      failure_mode: "open",
      tool_mode: "all",
      conflicts: [],
      owner_id: alice.principal.id,
      created_at: res.body.created_at,
      updated_at: res.body.created_at,
      mcp_url: `${t.publicUrl}/api/v1/virtual-servers/${id}/mcp`,
    });
    const got = await alice.api("GET", res.headers.get("location")!);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  test("a disconnected member shows its connector's reason", async () => {
    const id = await connector(alice.api, "Down");
    await alice.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    await alice.api("POST", `/api/v1/connectors/${id}/disconnect`);
    const res = await create(alice.api, {
      name: "x",
      members: [{ connector_id: id }],
      failure_mode: "closed",
      tool_mode: "search",
    });
    expect(res.body.members[0]).toMatchObject({
      state: "disconnected",
      status: "unavailable",
      reason: "Disconnected at the user's request",
    });
    expect(res.body).toMatchObject({ failure_mode: "closed", tool_mode: "search" });
  });

  test("no members is allowed (a deleted connector can leave a virtual server so anyway)", async () => {
    const u = await someone();
    const res = await create(u.api, { name: "Empty", members: [] });
    expect(res.status).toBe(201);
    expect(res.body.members).toEqual([]);
  });
});

describe("members", () => {
  test("another user's connector, a missing one and a repeated one are 422s naming the member by index", async () => {
    const mine = await connector(alice.api, "Mine");
    const his = await connector(bob.api, "His");
    const res = await create(alice.api, {
      name: "x",
      members: [
        { connector_id: mine },
        { connector_id: his },
        { connector_id: "no-such-connector" },
        { connector_id: mine, prefix: "again" },
      ],
    });
    expectProblem(res, 422);
    expect(res.body.errors).toEqual([
      { field: "body.members[1].connector_id", detail: `${his} is not one of the owner's connectors` },
      { field: "body.members[2].connector_id", detail: "no-such-connector is not one of the owner's connectors" },
      { field: "body.members[3].connector_id", detail: `connector ${mine} is already members[0]` },
    ]);
    expect(res.body.detail).toContain(his);
  });

  test('two members with one prefix — default or explicit, "" too — are a 422 naming both', async () => {
    const a = await connector(alice.api, "Same Name");
    const b = await connector(alice.api, "same-name");
    const clash = await create(alice.api, { name: "x", members: [{ connector_id: a }, { connector_id: b }] });
    expectProblem(clash, 422);
    expect(clash.body.errors).toEqual([{ field: "body.members[1].prefix", detail: expect.stringContaining("members[0]") }]);
    expect(clash.body.detail).toContain(a);
    expect(clash.body.detail).toContain(b);
    const empty = await create(alice.api, {
      name: "x",
      members: [
        { connector_id: a, prefix: "" },
        { connector_id: b, prefix: "" },
      ],
    });
    expectProblem(empty, 422);
    expect(empty.body.errors[0].field).toBe("body.members[1].prefix");
    const fine = await create(alice.api, {
      name: "x",
      members: [{ connector_id: a, prefix: "" }, { connector_id: b }],
    });
    expect(fine.status).toBe(201);
    expect(fine.body.members.map((m: { prefix: string }) => m.prefix)).toEqual(["", "same-name"]);
  });

  test.each(["-x", "X", "a_b", "a__b", "a".repeat(25), "a b", "é"])("prefix %p is a 422 naming it", async (prefix) => {
    const id = await connector(alice.api, "P");
    const res = await create(alice.api, { name: "x", members: [{ connector_id: id, prefix }] });
    expectProblem(res, 422);
    expect(res.body.errors.map((e: { field: string }) => e.field).join()).toContain("members");
  });

  test("a connector with no usable name gets the id's first 8 characters", async () => {
    const id = await connector(alice.api, "日本");
    const res = await create(alice.api, { name: "x", members: [{ connector_id: id }] });
    expect(res.body.members[0].prefix).toBe(id.slice(0, 8));
    // UUIDv7 ids begin with their creation time: two made in the same minute share those 8 characters, and the
    // second member then needs a prefix of its own (never a guessed one).
    t.clock.advance(1);
    const nameless = await connector(alice.api);
    const clash = await create(alice.api, { name: "x", members: [{ connector_id: id }, { connector_id: nameless }] });
    // (Unless the 65-second step of those 8 characters fell between the two.)
    if (nameless.slice(0, 8) !== id.slice(0, 8)) return expect(clash.status).toBe(201);
    expectProblem(clash, 422);
    expect(clash.body.errors[0].field).toBe("body.members[1].prefix");
  });
});

describe("hostile and oversized input", () => {
  test.each([
    [{ members: [] }, "body.name"],
    [{ name: "", members: [] }, "body.name"],
    [{ name: "   ", members: [] }, "body.name"],
    [{ name: "x".repeat(201), members: [] }, "body.name"],
    [{ name: "x" }, "body.members"],
    [{ name: "x", members: [], description: "d".repeat(2001) }, "body.description"],
    [{ name: "x", members: [], failure_mode: "sometimes" }, "body.failure_mode"],
    [{ name: "x", members: [], tool_mode: "some" }, "body.tool_mode"],
    [{ name: "x", members: [], colour: "red" }, "body.colour"],
    [{ name: "x", members: [{ connector_id: "a", extra: 1 }] }, "body.members"],
    [{ name: "x", members: [{}] }, "body.members"],
    [{ name: "x", members: "all" }, "body.members"],
  ])("%j is a 422 naming %s", async (body, field) => {
    const res = await create(alice.api, body);
    expectProblem(res, 422);
    expect(res.body.errors.map((e: { field: string }) => e.field).join(" ")).toContain(field);
  });

  test("more than 50 members is a 422", async () => {
    const members = Array.from({ length: 51 }, (_, i) => ({ connector_id: `c${i}`, prefix: `p${i}` }));
    expectProblem(await create(alice.api, { name: "x", members }), 422);
  });

  test("VIRTUAL__MAX_PER_USER: one more is a 409 naming the setting", async () => {
    const small = await createTestApp({ env: { VIRTUAL__MAX_PER_USER: "2" } });
    try {
      const u = await small.user("carol");
      for (let i = 0; i < 2; i++) expect((await create(u.api, { name: `v${i}`, members: [] })).status).toBe(201);
      const res = await create(u.api, { name: "one more", members: [] });
      expectProblem(res, 409);
      expect(res.body.detail).toContain("VIRTUAL__MAX_PER_USER");
      // Another user has their own count.
      expect((await create(small.api, { name: "admin's", members: [] })).status).toBe(201);
    } finally {
      await small.close();
    }
  });

  test("no credentials: 401; malformed JSON: 400", async () => {
    expectProblem(await t.apiOf(null)("GET", "/api/v1/virtual-servers"), 401);
    expectProblem(await alice.api("POST", "/api/v1/virtual-servers", { raw: '{"name": ' }), 400);
  });
});

describe("ownership", () => {
  test("another user's virtual server is a 404 to read, change and delete; an administrator acts as its owner", async () => {
    const mine = await connector(alice.api, "Owned");
    const id = (await create(alice.api, { name: "Alice's", members: [{ connector_id: mine }] })).body.id;
    expectProblem(await bob.api("GET", `/api/v1/virtual-servers/${id}`), 404);
    expectProblem(await bob.api("PATCH", `/api/v1/virtual-servers/${id}`, { body: { name: "Bob's" } }), 404);
    expectProblem(await bob.api("DELETE", `/api/v1/virtual-servers/${id}`), 404);
    expect((await bob.api("GET", "/api/v1/virtual-servers")).body.items.map((v: { id: string }) => v.id)).not.toContain(id);

    expect((await t.api("GET", `/api/v1/virtual-servers/${id}`)).status).toBe(200);
    // Members stay the owner's: the administrator picks from Alice's connectors, not their own.
    const adminsOwn = await connector(t.api, "Admin's");
    const refused = await t.api("PATCH", `/api/v1/virtual-servers/${id}`, { body: { members: [{ connector_id: adminsOwn }] } });
    expectProblem(refused, 422);
    const other = await connector(alice.api, "Second");
    const changed = await t.api("PATCH", `/api/v1/virtual-servers/${id}`, {
      body: { members: [{ connector_id: mine }, { connector_id: other }] },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.owner_id).toBe(alice.principal.id);
    expect((await t.api("DELETE", `/api/v1/virtual-servers/${id}`)).status).toBe(204);
    expectProblem(await alice.api("GET", `/api/v1/virtual-servers/${id}`), 404);
  });

  test("an administrator's listing has everyone's", async () => {
    const id = (await create(bob.api, { name: "Bob's", members: [] })).body.id;
    const ids: string[] = [];
    for (let cursor: string | null | undefined; cursor !== null;) {
      const page = await t.api("GET", `/api/v1/virtual-servers?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      ids.push(...page.body.items.map((v: { id: string }) => v.id));
      cursor = page.body.next_cursor;
    }
    expect(ids).toContain(id);
  });
});

describe("change and delete", () => {
  test("PATCH replaces what it gives; a member kept keeps its prefix even when its connector was renamed", async () => {
    const a = await connector(alice.api, "Alpha");
    const b = await connector(alice.api, "Beta");
    const created = (await create(alice.api, { name: "x", description: "d", members: [{ connector_id: a }] })).body;
    t.clock.advance(1000);
    await alice.api("PATCH", `/api/v1/connectors/${a}`, { body: { metadata: { name: "Renamed" } } });
    const res = await alice.api("PATCH", `/api/v1/virtual-servers/${created.id}`, {
      body: { name: "y", description: null, members: [{ connector_id: b }, { connector_id: a }], tool_mode: "search" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "y", description: null, tool_mode: "search", failure_mode: "open" });
    expect(res.body.members.map((m: { connector_id: string; prefix: string }) => [m.connector_id, m.prefix])).toEqual([
      [b, "beta"],
      [a, "alpha"],
    ]);
    expect(res.body.updated_at).not.toBe(created.updated_at);
    expect(res.body.created_at).toBe(created.created_at);
    const only = await alice.api("PATCH", `/api/v1/virtual-servers/${created.id}`, { body: { failure_mode: "closed" } });
    expect(only.body).toMatchObject({ name: "y", failure_mode: "closed" });
    expect(only.body.members).toHaveLength(2);
  });

  test("an empty PATCH and a bad one are 422s; an unknown id is a 404", async () => {
    const id = (await create(alice.api, { name: "x", members: [] })).body.id;
    expectProblem(await alice.api("PATCH", `/api/v1/virtual-servers/${id}`, { body: {} }), 422);
    expectProblem(await alice.api("PATCH", `/api/v1/virtual-servers/${id}`, { body: { owner_id: bob.principal.id } }), 422);
    expectProblem(await alice.api("PATCH", "/api/v1/virtual-servers/nope", { body: { name: "x" } }), 404);
    expectProblem(await alice.api("GET", "/api/v1/virtual-servers/nope"), 404);
    expectProblem(await alice.api("DELETE", "/api/v1/virtual-servers/nope"), 404);
  });

  test("DELETE is 204, then 404; its connectors stay", async () => {
    const c = await connector(alice.api, "Stays");
    const id = (await create(alice.api, { name: "x", members: [{ connector_id: c }] })).body.id;
    expect((await alice.api("DELETE", `/api/v1/virtual-servers/${id}`)).status).toBe(204);
    expectProblem(await alice.api("GET", `/api/v1/virtual-servers/${id}`), 404);
    expect((await alice.api("GET", `/api/v1/connectors/${c}`)).status).toBe(200);
  });
});

describe("cascades", () => {
  test("deleting a connector removes it from every virtual server", async () => {
    const gone = await connector(alice.api, "Gone");
    const stays = await connector(alice.api, "Stays Here");
    const one = (await create(alice.api, { name: "1", members: [{ connector_id: gone }, { connector_id: stays }] })).body.id;
    const two = (await create(alice.api, { name: "2", members: [{ connector_id: gone, prefix: "" }] })).body.id;
    expect((await alice.api("DELETE", `/api/v1/connectors/${gone}`)).status).toBe(204);
    expect((await alice.api("GET", `/api/v1/virtual-servers/${one}`)).body.members.map((m: any) => m.connector_id)).toEqual([
      stays,
    ]);
    expect((await alice.api("GET", `/api/v1/virtual-servers/${two}`)).body.members).toEqual([]);
    // The freed prefix may be used again.
    const again = await alice.api("PATCH", `/api/v1/virtual-servers/${two}`, {
      body: { members: [{ connector_id: stays, prefix: "" }] },
    });
    expect(again.status).toBe(200);
  });

  test("a connector deleted by any other path leaves too (the foreign key's cascade)", async () => {
    const c = await connector(alice.api, "Cascaded");
    const id = (await create(alice.api, { name: "x", members: [{ connector_id: c }] })).body.id;
    expect(await createConnectorRepository(t.deps.store).delete(c)).toBe(true);
    expect((await alice.api("GET", `/api/v1/virtual-servers/${id}`)).body.members).toEqual([]);
  });

  test("deleting a user deletes their virtual servers", async () => {
    const u = await someone();
    const c = await connector(u.api, "Theirs");
    const id = (await create(u.api, { name: "x", members: [{ connector_id: c }] })).body.id;
    expect((await t.api("DELETE", `/api/v1/users/${u.principal.id}`)).status).toBe(204);
    expectProblem(await t.api("GET", `/api/v1/virtual-servers/${id}`), 404);
  });
});

describe("pages", () => {
  test("newest first in pages of limit, next_cursor until the last; a foreign cursor is a 422", async () => {
    const u = await someone();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push((await create(u.api, { name: `v${i}`, members: [] })).body.id);
      if (i % 2 === 0) t.clock.advance(1);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await u.api("GET", `/api/v1/virtual-servers?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((v: { id: string }) => v.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...made].reverse());
    const bad = await u.api("GET", "/api/v1/virtual-servers?cursor=bm90LWEtY3Vyc29y");
    expectProblem(bad, 422);
    expect(bad.body.errors[0].field).toBe("query.cursor");
    expectProblem(await u.api("GET", "/api/v1/virtual-servers?limit=0"), 422);
    expectProblem(await u.api("GET", "/api/v1/virtual-servers?limit=101"), 422);
  });
});
