import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { pagedToolsServer } from "../peers/paged-tools";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient } from "../support/mcp";
import { waitFor } from "../support/wait";

// GET /api/v1/connectors/{id}/tools (the server's tools before the policy, for the console's policy editor) and
// GET …/tools/changes (a changed tool's approved and current definitions), through app.handle on either store.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.user("alice");
  bob = await t.user("bob");
});
afterAll(() => t.close());

async function setUp(origin: string, policy: Record<string, unknown>) {
  const server = pagedToolsServer(["alpha", "beta", "gamma"], 2);
  t.network.serve(origin, server.handler);
  const id = await connectedConnector(alice.api, `${origin}/mcp`);
  const patched = await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: policy } });
  expect(patched.status).toBe(200);
  const mcp = await mcpClient(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, { token: alice.token }, t.handle);
  const names = async () => {
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await mcp.client.listTools(cursor ? { cursor } : {});
      all.push(...page.tools.map((tool) => tool.name));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  };
  return { server, id, mcp, names };
}

describe("the server's tools, before the policy", () => {
  test("every page, the tools the policy hides and renames as the server names and describes them", async () => {
    const s = await setUp("https://listing.example", { deny: ["beta"], rename: { gamma: "g" }, descriptions: { alpha: "Ours" } });
    expect(await s.names()).toEqual(["alpha", "g"]);
    const listed = await alice.api("GET", `/api/v1/connectors/${s.id}/tools`);
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual(
      ["alpha", "beta", "gamma"].map((name) => ({
        name,
        description: `The server's ${name}`,
        inputSchema: { type: "object", properties: {} },
      })),
    );
    await s.mcp.close();
  });

  test("refusals are problems: another user's connector, one not connected, a bad id", async () => {
    const s = await setUp("https://refusals.example", { deny: ["beta"] });
    expectProblem(await bob.api("GET", `/api/v1/connectors/${s.id}/tools`), 404);
    expectProblem(await bob.api("GET", `/api/v1/connectors/${s.id}/tools/changes`), 404);
    expectProblem(await alice.api("GET", `/api/v1/connectors/not-a-uuid/tools`), 404);
    expectProblem(await alice.api("GET", `/api/v1/connectors/not-a-uuid/tools/changes`), 404);
    expectProblem(await alice.api("GET", `/api/v1/connectors/${s.id}/tools`, { as: null }), 401);
    await alice.api("POST", `/api/v1/connectors/${s.id}/disconnect`);
    expectProblem(await alice.api("GET", `/api/v1/connectors/${s.id}/tools`), 409);
    await s.mcp.close();
  });

  test("a server that fails the listing is a 502 that says so", async () => {
    const s = await setUp("https://failing.example", { deny: ["beta"] });
    await s.mcp.close();
    t.network.serve("https://failing.example", () => new Response("down", { status: 500 }));
    const res = await alice.api("GET", `/api/v1/connectors/${s.id}/tools`);
    expectProblem(res, 502);
    expect(res.body.detail).toContain("500");
  });
});

describe("a tool policy's refusals name the field", () => {
  test("a bad new name, a description too long and two tools given one name: 422 at the tool's own field", async () => {
    const { body } = await alice.api("POST", "/api/v1/connectors", { body: { url: "https://fields.example/mcp" } });
    const refused = async (tool_policy: unknown) => {
      const res = await alice.api("PATCH", `/api/v1/connectors/${body.id}`, { body: { tool_policy } });
      expectProblem(res, 422);
      return res.body.errors;
    };
    expect(await refused({ rename: { alpha: "two words" } })).toEqual([
      { field: "body.tool_policy.rename.alpha", detail: expect.stringContaining("1 to 128 of A-Z a-z 0-9") },
    ]);
    expect(await refused({ descriptions: { beta: "x".repeat(4097) } })).toEqual([
      { field: "body.tool_policy.descriptions.beta", detail: expect.stringContaining("4096") },
    ]);
    expect(await refused({ rename: { alpha: "same", beta: "same" } })).toEqual([
      { field: "body.tool_policy.rename.beta", detail: 'gives "alpha" and "beta" the same name "same"' },
    ]);
    expect(await refused({ pin: "sometimes" })).toEqual([{ field: "body.tool_policy.pin", detail: expect.any(String) }]);
  });
});

describe("changed tools with both definitions", () => {
  test("a changed description and a new tool: approved and current definitions; approving one leaves the other", async () => {
    const s = await setUp("https://changes.example", { pin: "strict" });
    expect(await s.names()).toEqual(["alpha", "beta", "gamma"]);
    // Pins are written beside the listing, not in it: the first listing is the approved one once it is written.
    await waitFor("the first listing pinned", async () => {
      const c = await alice.api("GET", `/api/v1/connectors/${s.id}`);
      return c.body.tools_pinned_at !== null;
    });
    const empty = await alice.api("GET", `/api/v1/connectors/${s.id}/tools/changes`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ items: [] });

    s.server.descriptions.beta = "Now sends your files away";
    s.server.names.push("delta");
    expect(await s.names()).toEqual(["alpha", "gamma"]);
    const changes = await waitFor("both changes recorded", async () => {
      const res = await alice.api("GET", `/api/v1/connectors/${s.id}/tools/changes`);
      return res.body.items.length === 2 && res.body.items;
    });
    const schema = { type: "object", properties: {} };
    expect(changes).toMatchObject([
      {
        name: "beta",
        change: "changed",
        approved: { name: "beta", description: "The server's beta", inputSchema: schema },
        current: { name: "beta", description: "Now sends your files away", inputSchema: schema },
      },
      { name: "delta", change: "added", approved: null, current: { name: "delta", description: "The server's delta" } },
    ]);

    const approved = await alice.api("POST", `/api/v1/connectors/${s.id}/tools/approve`, { body: { names: ["beta"] } });
    expect(approved.body.tool_changes.map((c: { name: string }) => c.name)).toEqual(["delta"]);
    const after = await alice.api("GET", `/api/v1/connectors/${s.id}/tools/changes`);
    expect(after.body.items.map((c: { name: string }) => c.name)).toEqual(["delta"]);
    expect(await s.names()).toEqual(["alpha", "beta", "gamma"]);

    // Changed again after the approval: the approved definition is the one approved, not the first.
    s.server.descriptions.beta = "A third description";
    await s.names();
    const again = await waitFor("beta changed again", async () => {
      const res = await alice.api("GET", `/api/v1/connectors/${s.id}/tools/changes`);
      return res.body.items.some((c: { name: string }) => c.name === "beta") && res.body.items;
    });
    expect(again.find((c: { name: string }) => c.name === "beta")).toMatchObject({
      approved: { description: "Now sends your files away" },
      current: { description: "A third description" },
    });
    await s.mcp.close();
  });
});
