import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { compileToolPolicy } from "../../src/connectors/tool-policy";
import { rewriteResponse } from "../../src/proxy/tool-filter";
import { pagedToolsServer } from "../peers/paged-tools";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpPost } from "../support/mcp";

// A connector's tool policy, through app.handle with the MCP SDK's own client and a server that pages its tools and
// counts the calls that reach it: listings filtered page by page with cursors intact, hidden tools refused here,
// renamed ones called by their new names, event-stream answers rewritten however they are cut into chunks.
const TOOLS = ["alpha", "beta", "gamma", "delta", "epsilon"];
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const json = pagedToolsServer(TOOLS);
const streamed = pagedToolsServer(TOOLS, 2, false);

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://json.example", json.handler);
  t.network.serve("https://sse.example", streamed.handler);
  alice = await t.user("alice");
});
afterAll(() => t.close());

async function client(id: string) {
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${alice.token}`);
    return t.handle(request);
  };
  const mcp = new Client({ name: "policy-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${t.publicUrl}/api/v1/connectors/${id}/mcp`), { fetch: fetchFn }));
  return mcp;
}

/** Every page of the listing, as the client walks the cursors. */
async function allPages(mcp: Client) {
  const pages: { names: string[]; description: Record<string, string | undefined> }[] = [];
  let cursor: string | undefined;
  do {
    const page = await mcp.listTools(cursor ? { cursor } : {});
    pages.push({
      names: page.tools.map((tool) => tool.name),
      description: Object.fromEntries(page.tools.map((tool) => [tool.name, tool.description])),
    });
    cursor = page.nextCursor;
  } while (cursor);
  return pages;
}

const policy = {
  deny: ["beta", "epsilon"],
  rename: { gamma: "gamma_v2" },
  descriptions: { alpha: "Alpha, as the operator explains it" },
};

for (const [era, origin, server] of [
  ["JSON answers", "https://json.example", json],
  ["event-stream answers", "https://sse.example", streamed],
] as const) {
  describe(`a deny list with a rename and a description (${era})`, () => {
    test("listings are filtered page by page with the server's cursors; hidden tools never reach the server; renames round-trip", async () => {
      const id = await connectedConnector(alice.api, `${origin}/mcp`);
      const patched = await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: policy } });
      expect(patched.status).toBe(200);
      expect(patched.body.tool_policy).toEqual(policy);
      const mcp = await client(id);

      const pages = await allPages(mcp);
      expect(pages.map((p) => p.names)).toEqual([["alpha"], ["gamma_v2", "delta"], []]);
      expect(pages[0]!.description.alpha).toBe("Alpha, as the operator explains it");
      expect(pages[1]!.description.gamma_v2).toBe("The server's gamma");

      const before = new Map(server.calls);
      const renamed = await mcp.callTool({ name: "gamma_v2", arguments: {} });
      expect(renamed.content).toEqual([{ type: "text", text: "called gamma" }]);
      // Denied, and the renamed tool under its old name. (A name the policy does not know goes to the server, which decides.)
      for (const hidden of ["beta", "gamma"]) {
        await expect(mcp.callTool({ name: hidden, arguments: {} })).rejects.toThrow(/Unknown tool/);
      }
      expect(server.calls.get("beta") ?? 0).toBe(before.get("beta") ?? 0);
      expect(server.calls.get("gamma")).toBe((before.get("gamma") ?? 0) + 1);
      await mcp.close();
    });
  });
}

describe("an allow list", () => {
  test("shows and lets through only the tools it names; removing the policy shows all again", async () => {
    const id = await connectedConnector(alice.api, "https://json.example/allow");
    await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: { allow: ["delta"] } } });
    let mcp = await client(id);
    expect((await allPages(mcp)).flatMap((p) => p.names)).toEqual(["delta"]);
    await expect(mcp.callTool({ name: "alpha", arguments: {} })).rejects.toThrow(/Unknown tool/);
    await mcp.close();
    expect((await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: null } })).body.tool_policy).toBeNull();
    mcp = await client(id);
    expect((await allPages(mcp)).flatMap((p) => p.names)).toEqual(TOOLS);
    await mcp.close();
  });

  test("a policy that cannot be followed is refused with what is wrong", async () => {
    const id = await connectedConnector(alice.api, "https://json.example/bad");
    for (const tool_policy of [
      { allow: ["a"], deny: ["b"] },
      { rename: { a: "same", b: "same" } },
      { allow: ["a", "b"], rename: { a: "b" } },
      { rename: { a: "has spaces" } },
      { colour: "red" },
    ]) {
      expectProblem(await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy } }), 422);
    }
    expect((await alice.api("GET", `/api/v1/connectors/${id}`)).body.tool_policy).toBeNull();
  });
});

describe("on the wire", () => {
  const send = (id: string, body: unknown, headers: Record<string, string> = {}) =>
    t.handle(mcpPost(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, alice.token, JSON.stringify(body), headers));

  test("2026-07-28 routing headers must agree with the body; a renamed call's Mcp-Name is the server's; batches are refused", async () => {
    const id = await connectedConnector(alice.api, "https://json.example/headers");
    await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: policy } });
    const call = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "gamma_v2", arguments: {} } };
    const disagreeing = await send(id, call, { "mcp-method": "tools/call", "mcp-name": "alpha" });
    expect(disagreeing.status).toBe(400);
    expect((await disagreeing.json()).error.message).toContain("Mcp-Name");
    expect((await send(id, call, { "mcp-method": "tools/list" })).status).toBe(400);
    expect((await send(id, [call])).status).toBe(400);
    // Agreeing headers: the server gets the call under its own name.
    const before = json.calls.get("gamma") ?? 0;
    const agreed = await send(id, call, { "mcp-method": "tools/call", "mcp-name": "gamma_v2" });
    expect(agreed.status).toBe(200);
    expect(json.calls.get("gamma")).toBe(before + 1);
    // A hidden tool: a JSON-RPC error with the request's id, and no request upstream.
    const hidden = await (await send(id, { ...call, id: "x-1", params: { name: "beta", arguments: {} } })).json();
    expect(hidden).toEqual({ jsonrpc: "2.0", id: "x-1", error: { code: -32602, message: "Unknown tool: beta" } });
  });

  test("an event-stream answer cut into one-byte chunks is rewritten whole; the events around it pass as they came", async () => {
    const view = compileToolPolicy(policy);
    const listing = JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      result: { tools: TOOLS.map((name) => ({ name, inputSchema: { type: "object" } })) },
    });
    const text = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}\n\nid: 9\nevent: message\ndata: ${listing}\n\n`;
    const bytes = new TextEncoder().encode(text);
    const upstream = new Response(
      new ReadableStream({
        start(controller) {
          for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
    const out = await (await rewriteResponse(upstream, new Set(["3"]), view, 1 << 20)).text();
    const [notification, answer] = out.split("\n\n");
    expect(notification).toBe(text.split("\n\n")[0]!);
    expect(answer!.split("\n").slice(0, 2)).toEqual(["id: 9", "event: message"]);
    const rewritten = JSON.parse(answer!.split("\n")[2]!.slice(6));
    expect(rewritten.result.tools.map((tool: { name: string }) => tool.name)).toEqual(["alpha", "gamma_v2", "delta"]);
  });
});
