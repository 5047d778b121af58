import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startLabelledServer } from "../peers/labelled-server";
import { pagedToolsServer } from "../peers/paged-tools";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient, toolText } from "../support/mcp";

// tool_mode "search" (docs/interface.md §9.5): two tools listed, search over the admitted tools, calls by either way.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const labelled = await startLabelledServer("two");
const github = pagedToolsServer(["create_issue", "list_issues", "search_code", "createPullRequest"], 10);
Object.assign(github.descriptions, {
  create_issue: "Open a new issue in a repository",
  list_issues: "List the issues of a repository, newest first",
  search_code: "Find code across every repository",
  createPullRequest: "Propose changes from a branch for review",
});
const githubPeer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: github.handler });
// A member whose own tools are named like the search mode's, exposed as they are (prefix "").
const shadowed = pagedToolsServer(["search_tools", "send_email"], 10);
shadowed.descriptions.send_email = "Send an email message to someone";
const shadowedPeer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: shadowed.handler });

let idLabelled: string;
let idGithub: string;
let idShadowed: string;
beforeAll(async () => {
  t = await createTestApp({ realNetwork: true, env: { VIRTUAL__MEMBER_TIMEOUT_SECONDS: "2" } });
  alice = await t.user("alice");
  idLabelled = await connectedConnector(alice.api, labelled.url);
  idGithub = await connectedConnector(alice.api, `http://127.0.0.1:${githubPeer.port}/mcp`);
  idShadowed = await connectedConnector(alice.api, `http://127.0.0.1:${shadowedPeer.port}/mcp`);
  // The member's own policy hides its "secret" tool: search never finds it.
  const patched = await alice.api("PATCH", `/api/v1/connectors/${idLabelled}`, { body: { tool_policy: { deny: ["secret"] } } });
  expect(patched.status).toBe(200);
});
afterAll(async () => {
  await t.close();
  await labelled.stop();
  await githubPeer.stop(true);
  await shadowedPeer.stop(true);
});

async function searchServer(members: { connector_id: string; prefix?: string }[]) {
  const res = await alice.api("POST", "/api/v1/virtual-servers", { body: { name: "Search", members, tool_mode: "search" } });
  expect(res.status).toBe(201);
  return res.body as { id: string; mcp_url: string };
}

/** Member "two" (its "secret" hidden by its policy) and "gh". */
const bothMembers = () =>
  searchServer([
    { connector_id: idLabelled, prefix: "two" },
    { connector_id: idGithub, prefix: "gh" },
  ]);

/** An SDK client of the virtual server, as alice, through app.handle. */
const client = async (mcpUrl: string) => (await mcpClient(mcpUrl, { token: alice.token }, t.fetch)).client;

type Found = { tools: { name: string; description?: string; inputSchema: unknown }[]; unavailable?: unknown[] };
async function search(mcp: Client, query: string, limit?: number) {
  const result = await mcp.callTool({ name: "search_tools", arguments: { query, ...(limit !== undefined && { limit }) } });
  expect(result.isError).toBeFalsy();
  const found = result.structuredContent as Found;
  // The same, as text, for clients that read only text.
  expect(JSON.parse(toolText(result))).toEqual(found);
  return found;
}

describe("tool_mode search", () => {
  test("lists exactly search_tools and call_tool; prompts and resources as in all mode", async () => {
    const server = await bothMembers();
    const mcp = await client(server.mcp_url);
    const { tools, nextCursor } = await mcp.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool"]);
    expect(nextCursor).toBeUndefined();
    expect(tools[0]!.inputSchema).toMatchObject({
      type: "object",
      properties: { query: { type: "string" }, limit: { type: "integer", minimum: 1, maximum: 50, default: 10 } },
      required: ["query"],
    });
    expect(tools[1]!.inputSchema).toMatchObject({ type: "object", required: ["name"] });
    // A cursor is never given in this mode: any cursor is not ours.
    const refused = await mcp.listTools({ cursor: "x" }).catch((e: Error) => e);
    expect((refused as { code?: number }).code).toBe(-32602);
    expect((await mcp.listPrompts()).prompts.map((p) => p.name)).toEqual(["two__hello"]);
    expect((await mcp.listResources()).resources.map((r) => r.uri)).toEqual(["test://two/readme"]);
    await mcp.close();
  });

  test("ranks the right tool first, with its full definition; only admitted tools are found", async () => {
    const server = await bothMembers();
    const mcp = await client(server.mcp_url);
    const opened = await search(mcp, "open an issue");
    expect(opened.tools[0]).toEqual({
      name: "gh__create_issue",
      description: "Open a new issue in a repository",
      inputSchema: { type: "object", properties: {} },
    });
    expect((await search(mcp, "list issues")).tools[0]!.name).toBe("gh__list_issues");
    // camelCase names are words too, and prefixes match.
    expect((await search(mcp, "pull request")).tools[0]!.name).toBe("gh__createPullRequest");
    expect((await search(mcp, "echo")).tools[0]!.name).toBe("two__echo");
    expect((await search(mcp, "repository", 1)).tools).toHaveLength(1);
    expect((await search(mcp, "repository")).tools.map((tool) => tool.name).sort()).toEqual([
      "gh__create_issue",
      "gh__list_issues",
      "gh__search_code",
    ]);

    // The member's policy hides two's "secret": its name and its description find nothing.
    expect((await search(mcp, "secret")).tools).toEqual([]);
    expect((await search(mcp, "policy may hide")).tools.map((tool) => tool.name)).not.toContain("two__secret");

    // Input that does not fit the schema is a tool error the model can correct.
    const bad = await mcp.callTool({ name: "search_tools", arguments: { query: "x", limit: 51 } });
    expect(bad.isError).toBe(true);
    expect(toolText(bad)).toContain("limit");
    await mcp.close();
  });

  test("a found tool is called through call_tool or by its name; unknown and hidden names are -32602", async () => {
    const server = await bothMembers();
    const mcp = await client(server.mcp_url);
    // Called before any search or listing: the session's listing is made then.
    const viaCallTool = await mcp.callTool({ name: "call_tool", arguments: { name: "two__echo", arguments: { message: "hi" } } });
    expect(viaCallTool).toEqual({ content: [{ type: "text", text: "two: hi" }] });
    expect(toolText(await mcp.callTool({ name: "gh__search_code", arguments: {} }))).toBe("called search_code");
    expect(github.calls.get("search_code")).toBe(1);
    // Progress passes through call_tool as through a direct call.
    const seen: number[] = [];
    const slow = await mcp.callTool({ name: "call_tool", arguments: { name: "two__slow" } }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    expect(toolText(slow)).toBe("two: slow done");
    expect(seen).toEqual([1, 2]);

    for (const name of ["two__secret", "two__nothing"]) {
      const direct = await mcp.callTool({ name, arguments: {} }).catch((e: Error) => e);
      const through = await mcp.callTool({ name: "call_tool", arguments: { name } }).catch((e: Error) => e);
      expect((direct as { code?: number }).code).toBe(-32602);
      expect((through as { code?: number }).code).toBe(-32602);
      expect((through as Error).message).toBe((direct as Error).message);
      expect((direct as Error).message).toContain(`Unknown tool: ${name}`);
    }
    expect(labelled.calls.get("secret") ?? 0).toBe(0);
    const missing = await mcp.callTool({ name: "call_tool", arguments: {} });
    expect(missing.isError).toBe(true);
    await mcp.close();
  });

  test('a member tool named search_tools (prefix "") is found, and reached only through call_tool', async () => {
    const server = await searchServer([{ connector_id: idShadowed, prefix: "" }]);
    const mcp = await client(server.mcp_url);
    const found = await search(mcp, "search tools");
    expect(found.tools.map((tool) => tool.name)).toEqual(["search_tools"]);
    expect((await search(mcp, "email")).tools.map((tool) => tool.name)).toEqual(["send_email"]);
    // By its name: the search mode's own tool answers.
    expect((await mcp.callTool({ name: "search_tools", arguments: { query: "email" } })).structuredContent).toBeDefined();
    expect(shadowed.calls.get("search_tools") ?? 0).toBe(0);
    const reached = await mcp.callTool({ name: "call_tool", arguments: { name: "search_tools" } });
    expect(toolText(reached)).toBe("called search_tools");
    expect(shadowed.calls.get("search_tools")).toBe(1);
    await mcp.close();
  });

  test("the index follows the listing: a tool added upstream is found after the next tools/list", async () => {
    const grown = pagedToolsServer(["alpha"], 10);
    const peer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: grown.handler });
    try {
      const id = await connectedConnector(alice.api, `http://127.0.0.1:${peer.port}/mcp`);
      const server = await searchServer([{ connector_id: id, prefix: "g" }]);
      const mcp = await client(server.mcp_url);
      await mcp.listTools();
      expect((await search(mcp, "weather")).tools).toEqual([]);
      grown.names.push("weather_forecast");
      // The session keeps its listing until the client lists again.
      expect((await search(mcp, "weather")).tools).toEqual([]);
      await mcp.listTools();
      expect((await search(mcp, "weather")).tools.map((tool) => tool.name)).toEqual(["g__weather_forecast"]);
      await mcp.close();
    } finally {
      await peer.stop(true);
    }
  });

  test("a description changed upstream (the same names) is searched after the next tools/list, in every session", async () => {
    const changing = pagedToolsServer(["alpha", "beta"], 10);
    const peer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: changing.handler });
    try {
      const id = await connectedConnector(alice.api, `http://127.0.0.1:${peer.port}/mcp`);
      const server = await searchServer([{ connector_id: id, prefix: "c" }]);
      const one = await client(server.mcp_url);
      await one.listTools();
      expect((await search(one, "zebra")).tools).toEqual([]);
      changing.descriptions.beta = "Helps at a zebra crossing";
      await one.listTools();
      expect((await search(one, "zebra")).tools.map((tool) => tool.description)).toEqual(["Helps at a zebra crossing"]);
      // Another session of the same virtual server: its own listing, with the same names, searched as it is now.
      const two = await client(server.mcp_url);
      await two.listTools();
      changing.descriptions.beta = "Nothing special";
      await two.listTools();
      expect((await search(two, "zebra")).tools).toEqual([]);
      await one.close();
      await two.close();
    } finally {
      await peer.stop(true);
    }
  });
  test("a query too long to search is a tool input error, not searched (fuzzy matching costs the square of a word's length)", async () => {
    const server = await bothMembers();
    const mcp = await client(server.mcp_url);
    // One word of 10,000 characters: searched, it took a 100 MB matrix (40,000: 1.6 GB, within one 4 MiB message).
    const long = await mcp.callTool({ name: "search_tools", arguments: { query: "a".repeat(10_000) } });
    expect(long.isError).toBe(true);
    expect(toolText(long)).toContain("query");
    // Many short words are as long a query: refused alike.
    const many = await mcp.callTool({ name: "search_tools", arguments: { query: "ab ".repeat(5_000) } });
    expect(many.isError).toBe(true);
    // A query of ordinary length is searched.
    expect((await search(mcp, "open an issue in a repository ".repeat(10))).tools[0]!.name).toBe("gh__create_issue");
    await mcp.close();
  });
});
