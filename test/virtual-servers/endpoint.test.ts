import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolResultSchema, ListResourcesRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startLabelledServer } from "../peers/labelled-server";
import { lateGate } from "../peers/late-gate";
import { pagedToolsServer } from "../peers/paged-tools";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, toolText } from "../support/mcp";
import { sseReader } from "../support/sse";
import { waitFor } from "../support/wait";

// A virtual server's MCP endpoint (docs/interface.md §9.4) through app.handle with the SDK's own client, its members
// real MCP servers on loopback reached through their connectors' proxy URLs.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const one = await startLabelledServer("one");
const two = await startLabelledServer("two");
const paged = pagedToolsServer(
  Array.from({ length: 130 }, (_, i) => `tool-${String(i).padStart(3, "0")}`),
  40,
);
const pagedPeer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: paged.handler });

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true, env: { VIRTUAL__MEMBER_TIMEOUT_SECONDS: "2" } });
  alice = await t.user("alice");
});
afterAll(async () => {
  await t.close();
  await one.stop();
  await two.stop();
  await pagedPeer.stop(true);
});

async function virtualServer(members: { connector_id: string; prefix?: string }[], failure_mode = "open") {
  const res = await alice.api("POST", "/api/v1/virtual-servers", { body: { name: "Both", members, failure_mode } });
  expect(res.status).toBe(201);
  return res.body as { id: string; mcp_url: string };
}

async function client(mcpUrl: string) {
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${alice.token}`);
    return t.fetch(request);
  };
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: fetchFn });
  const mcp = new Client({ name: "virtual-test", version: "1.0.0" });
  await mcp.connect(transport);
  return { mcp, transport };
}

async function allTools(mcp: Client) {
  const names: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await mcp.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  return { names, pages };
}

let idOne: string;
let idTwo: string;
beforeAll(async () => {
  idOne = await connectedConnector(alice.api, one.url);
  idTwo = await connectedConnector(alice.api, two.url);
  // Member two's own policy hides its "secret" tool.
  const patched = await alice.api("PATCH", `/api/v1/connectors/${idTwo}`, { body: { tool_policy: { deny: ["secret"] } } });
  expect(patched.status).toBe(200);
});

describe("two members with the same tool names", () => {
  test("both prefixed sets listed; a call reaches its own member; a hidden tool is neither listed nor callable", async () => {
    const server = await virtualServer([
      { connector_id: idOne, prefix: "one" },
      { connector_id: idTwo, prefix: "two" },
    ]);
    const { mcp } = await client(server.mcp_url);
    expect(mcp.getServerCapabilities()).toMatchObject({ tools: {}, prompts: {}, resources: {} });
    const { names } = await allTools(mcp);
    expect(names).toEqual(["one__echo", "one__secret", "one__slow", "two__echo", "two__slow"]);

    const before = { one: one.calls.get("echo") ?? 0, two: two.calls.get("echo") ?? 0 };
    expect(toolText(await mcp.callTool({ name: "two__echo", arguments: { message: "hi" } }))).toBe("two: hi");
    expect(two.calls.get("echo")).toBe(before.two + 1);
    expect(one.calls.get("echo") ?? 0).toBe(before.one);
    expect(toolText(await mcp.callTool({ name: "one__echo", arguments: { message: "yo" } }))).toBe("one: yo");

    // Hidden by member two's policy, and a name that exists nowhere: the same error, and member two never sees it.
    const hidden = await mcp.callTool({ name: "two__secret", arguments: {} }).catch((e: Error) => e);
    const unknown = await mcp.callTool({ name: "two__nothing", arguments: {} }).catch((e: Error) => e);
    expect(hidden).toBeInstanceOf(Error);
    expect((hidden as { code?: number }).code).toBe(-32602);
    expect((unknown as { code?: number }).code).toBe(-32602);
    expect((hidden as Error).message).toBe((unknown as Error).message.replace("two__nothing", "two__secret"));
    expect((hidden as Error).message).toContain("Unknown tool");
    expect(two.calls.get("secret") ?? 0).toBe(0);

    // Prompts and resources merged and routed too.
    const prompts = await mcp.listPrompts();
    expect(prompts.prompts.map((p) => p.name)).toEqual(["one__hello", "two__hello"]);
    const prompt = await mcp.getPrompt({ name: "two__hello", arguments: { name: "bob" } });
    expect(prompt.messages[0]!.content).toEqual({ type: "text", text: "two says hello to bob" });
    const resources = await mcp.listResources();
    expect(resources.resources.map((r) => r.uri)).toEqual(["test://one/readme", "test://two/readme"]);
    const read = await mcp.readResource({ uri: "test://one/readme" });
    expect(read.contents[0]).toMatchObject({ text: "one's readme" });
    await mcp.close();
  });

  test("progress from the member's event stream reaches the client with its own token", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp } = await client(server.mcp_url);
    const seen: number[] = [];
    const result = await mcp.callTool({ name: "one__slow", arguments: {} }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    expect(toolText(result)).toBe("one: slow done");
    expect(seen).toEqual([1, 2]);
    await mcp.close();
  });

  test("a URI no member lists goes to the one member whose resource template matches it; one that none matches is -32602", async () => {
    const server = await virtualServer([
      { connector_id: idOne, prefix: "one" },
      { connector_id: idTwo, prefix: "two" },
    ]);
    const { mcp } = await client(server.mcp_url);
    const templates = (await mcp.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate).sort();
    expect(templates).toEqual(["test://one/notes/{id}", "test://two/notes/{id}"]);
    const read = await mcp.readResource({ uri: "test://two/notes/7" });
    expect(read.contents[0]).toMatchObject({ text: "two's note 7" });
    await expect(mcp.readResource({ uri: "test://three/notes/7" })).rejects.toThrow(/Unknown resource/);
    await mcp.close();
  });

  test("a foreign cursor is -32602", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp } = await client(server.mcp_url);
    const refused = await mcp.listTools({ cursor: "40" }).catch((e: Error) => e);
    expect((refused as { code?: number }).code).toBe(-32602);
    await mcp.close();
  });
});

describe("pages", () => {
  test("a member with more tools than one page is listed whole, in this endpoint's own pages", async () => {
    const id = await connectedConnector(alice.api, `http://127.0.0.1:${pagedPeer.port}/mcp`);
    const server = await virtualServer([
      { connector_id: id, prefix: "paged" },
      { connector_id: idOne, prefix: "one" },
    ]);
    const { mcp } = await client(server.mcp_url);
    const { names, pages } = await allTools(mcp);
    expect(names).toHaveLength(133);
    expect(names.slice(0, 3)).toEqual(["one__echo", "one__secret", "one__slow"]);
    expect(names.at(-1)).toBe("paged__tool-129");
    expect(pages).toBe(2);
    expect(toolText(await mcp.callTool({ name: "paged__tool-100", arguments: {} }))).toBe("called tool-100");
    expect(paged.calls.get("tool-100")).toBe(1);
    await mcp.close();

    // A member without prompts or resources has none of them: not a failure, even with failure_mode closed.
    const closed = await virtualServer(
      [
        { connector_id: id, prefix: "paged" },
        { connector_id: idOne, prefix: "one" },
      ],
      "closed",
    );
    const strict = await client(closed.mcp_url);
    expect((await strict.mcp.listPrompts()).prompts.map((p) => p.name)).toEqual(["one__hello"]);
    expect((await strict.mcp.listResources()).resources.map((r) => r.uri)).toEqual(["test://one/readme"]);
    await strict.mcp.close();
  });
  test("a page ending at a long resource URI is continued: its cursor is this endpoint's own", async () => {
    // URIs are not bounded as names are: the 100th, where the first page ends, is 5,000 characters long; then an IRI
    // of 2,000 non-ASCII characters (6,000 bytes in UTF-8).
    const uris = Array.from({ length: 150 }, (_, i) => `test://long/${String(i).padStart(3, "0")}`);
    uris[99] += `?q=${"x".repeat(5000)}`;
    const handler = async (request: Request) => {
      const server = new Server({ name: "long-uris", version: "1.0.0" }, { capabilities: { resources: {} } });
      server.setRequestHandler(ListResourcesRequestSchema, async () => ({
        resources: uris.map((uri) => ({ uri, name: uri.slice(0, 20) })),
      }));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      return transport.handleRequest(request);
    };
    const peer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handler });
    try {
      const id = await connectedConnector(alice.api, `http://127.0.0.1:${peer.port}/mcp`);
      const server = await virtualServer([{ connector_id: id, prefix: "long" }]);
      const { mcp } = await client(server.mcp_url);
      for (const last of [uris[99]!, `test://long/099/${"é".repeat(2000)}`]) {
        uris[99] = last;
        const first = await mcp.listResources();
        expect(first.resources.at(-1)!.uri).toBe(last);
        expect(first.nextCursor).toBeString();
        const second = await mcp.listResources({ cursor: first.nextCursor });
        expect(second.resources.map((r) => r.uri)).toEqual(uris.slice(100));
      }
      await mcp.close();
    } finally {
      await peer.stop(true);
    }
  });
});

describe("a member that is down", () => {
  test("failure_mode open: left out of the listing, its tools' calls name it; closed: the listing fails", async () => {
    const down = await startLabelledServer("down");
    const idDown = await connectedConnector(alice.api, down.url);
    await down.stop();
    const open = await virtualServer([
      { connector_id: idOne, prefix: "one" },
      { connector_id: idDown, prefix: "down" },
    ]);
    const a = await client(open.mcp_url);
    expect((await allTools(a.mcp)).names).toEqual(["one__echo", "one__secret", "one__slow"]);
    const call = await a.mcp.callTool({ name: "down__echo", arguments: { message: "x" } }).catch((e: Error) => e);
    expect((call as { code?: number }).code).toBe(-32603);
    expect((call as Error).message).toContain(`Member "down" (connector ${idDown}) is unavailable`);
    await a.mcp.close();
    // The resource shows it: connected, but unavailable, with why.
    const shown = (await alice.api("GET", `/api/v1/virtual-servers/${open.id}`)).body.members;
    expect(shown[0]).toMatchObject({ connector_id: idOne, status: "ok", reason: null });
    expect(shown[1]).toMatchObject({ connector_id: idDown, state: "connected", status: "unavailable" });
    expect(shown[1].reason).toBeString();

    const closed = await virtualServer(
      [
        { connector_id: idOne, prefix: "one" },
        { connector_id: idDown, prefix: "down" },
      ],
      "closed",
    );
    const b = await client(closed.mcp_url);
    const listing = await b.mcp.listTools().catch((e: Error) => e);
    expect((listing as { code?: number }).code).toBe(-32603);
    expect((listing as Error).message).toContain(`member "down" (connector ${idDown})`);
    await b.mcp.close();
  });
  test('failure_mode open: a call to a tool of a member with prefix "" that is down names it too', async () => {
    const down = await startLabelledServer("bare");
    const idDown = await connectedConnector(alice.api, down.url);
    await down.stop();
    const server = await virtualServer([
      { connector_id: idOne, prefix: "one" },
      { connector_id: idDown, prefix: "" },
    ]);
    const { mcp } = await client(server.mcp_url);
    expect((await allTools(mcp)).names).toEqual(["one__echo", "one__secret", "one__slow"]);
    // Its tools keep their own names: "echo" is its, and so may "a__b" be (no other member has prefix "a").
    for (const name of ["echo", "a__b"]) {
      const call = await mcp.callTool({ name, arguments: { message: "x" } }).catch((e: Error) => e);
      expect((call as { code?: number }).code).toBe(-32603);
      expect((call as Error).message).toContain(`Member "" (connector ${idDown}) is unavailable`);
    }
    await mcp.close();
  });
});

describe("sessions", () => {
  test("one upstream session per member, reused; a member that forgot it is reopened once; DELETE ends them", async () => {
    const server = await virtualServer([
      { connector_id: idOne, prefix: "one" },
      { connector_id: idTwo, prefix: "two" },
    ]);
    const started = { one: one.sessions.started, two: two.sessions.started };
    const { mcp, transport } = await client(server.mcp_url);
    await allTools(mcp);
    await mcp.callTool({ name: "one__echo", arguments: { message: "a" } });
    await mcp.callTool({ name: "two__echo", arguments: { message: "b" } });
    expect(one.sessions.started).toBe(started.one + 1);
    expect(two.sessions.started).toBe(started.two + 1);

    await one.restart();
    expect(toolText(await mcp.callTool({ name: "one__echo", arguments: { message: "again" } }))).toBe("one: again");
    expect(one.sessions.started).toBe(started.one + 2);

    const ended = { one: one.sessions.ended, two: two.sessions.ended };
    await transport.terminateSession();
    expect(one.sessions.ended).toBe(ended.one + 1);
    expect(two.sessions.ended).toBe(ended.two + 1);
    // The client's session is gone: the next request is a 404 (MCP basic/transports "Session Management").
    const after = await mcp.listTools().catch((e: Error) => e);
    expect(after).toBeInstanceOf(Error);
    await mcp.close();
  });

  test("a session unused for 30 minutes ends with its upstream sessions; the client gets 404", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp } = await client(server.mcp_url);
    await mcp.callTool({ name: "one__echo", arguments: { message: "a" } });
    const ended = one.sessions.ended;
    t.clock.advance(31 * 60_000);
    // Another session opening sweeps the idle ones.
    const other = await client(server.mcp_url);
    await waitFor("the idle session's upstream DELETE", () => one.sessions.ended === ended + 1, 5_000);
    const after = await mcp.listTools().catch((e: Error) => e);
    expect(after).toBeInstanceOf(Error);
    expect((await other.mcp.listTools()).tools.map((tool) => tool.name)).toContain("one__echo");
    await other.mcp.close();
    await mcp.close();
  });

  test("a session unused for 30 minutes ends with its upstream sessions when no other session opens: the scheduler's tick ends it", async () => {
    // A member of this session only: the other tests' sessions idle out with this one.
    const idle = await startLabelledServer("idle");
    try {
      const id = await connectedConnector(alice.api, idle.url);
      const server = await virtualServer([{ connector_id: id, prefix: "idle" }]);
      const { mcp } = await client(server.mcp_url);
      // (Connecting the connector opened and ended a session of its own.)
      const { started, ended } = idle.sessions;
      await mcp.callTool({ name: "idle__echo", arguments: { message: "a" } });
      expect(idle.sessions).toEqual({ started: started + 1, ended });
      t.clock.advance(31 * 60_000);
      // Before, only a session opening swept the idle ones: with none opening, the upstream session (and a GET
      // stream) stayed open for ever, the scheduler's job forgetting the stored session only.
      await t.runJobs();
      await waitFor("the idle session's upstream DELETE", () => idle.sessions.ended === ended + 1, 5_000);
      await mcp.close();
    } finally {
      await idle.stop();
    }
  });

  test("the virtual server deleted: its sessions end, their GET streams and upstream sessions with them", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    // The SDK client's own GET is refused before it leaves: the test opens the stream and reads it.
    const transport = new StreamableHTTPClientTransport(new URL(server.mcp_url), {
      fetch: (input, init) => {
        const request = new Request(input, init);
        if (request.method === "GET") return Promise.resolve(new Response(null, { status: 405 }));
        request.headers.set("authorization", `Bearer ${alice.token}`);
        return t.fetch(request);
      },
    });
    const mcp = new Client({ name: "virtual-test", version: "1.0.0" });
    await mcp.connect(transport);
    await mcp.callTool({ name: "one__echo", arguments: { message: "a" } });
    const res = await t.fetch(
      new Request(server.mcp_url, {
        headers: { authorization: `Bearer ${alice.token}`, accept: "text/event-stream", "mcp-session-id": transport.sessionId! },
      }),
    );
    expect(res.status).toBe(200);
    const events = sseReader(res);
    expect((await events.next()).comment).toBe("connected");
    const ended = one.sessions.ended;
    expect((await alice.api("DELETE", `/api/v1/virtual-servers/${server.id}`)).status).toBe(204);
    // Nothing of a deleted virtual server stays open: its client's stream ends, and its member's session is ended.
    await expect(events.next()).rejects.toThrow("the stream ended");
    await waitFor("the deleted virtual server's upstream DELETE", () => one.sessions.ended === ended + 1, 5_000);
    await mcp.close();
  });

  test("a session ended while a listing waits for a member: no upstream session is opened after it", async () => {
    const gated = await startLabelledServer("gated");
    let delaying = false;
    // In front of `gated`: while `delaying`, its tools/list reaches it 300 ms late, after the client's DELETE.
    const gate = lateGate(gated.url, "tools/list", { delayMs: 300, delays: () => delaying });
    try {
      const id = await connectedConnector(alice.api, gate.url);
      const server = await virtualServer([{ connector_id: id, prefix: "g" }]);
      const { mcp, transport } = await client(server.mcp_url);
      const started = gated.sessions.started;
      const ended = gated.sessions.ended;
      await mcp.listTools();
      delaying = true;
      const listing = mcp.listTools().catch((e: Error) => e);
      await Bun.sleep(100);
      await transport.terminateSession();
      await listing;
      await Bun.sleep(300);
      // The one upstream session was ended with the client session, and none opened after (before, the member's 404
      // to the late tools/list opened a new one, which nothing ever ended).
      expect([gated.sessions.started - started, gated.sessions.ended - ended]).toEqual([1, 1]);
      await mcp.close();
    } finally {
      gate.stop();
      await gated.stop();
    }
  });

  test("GET opens the session's event stream: no Mcp-Session-Id is a 400, and so is not accepting an event stream", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp, transport } = await client(server.mcp_url);
    const authorization = `Bearer ${alice.token}`;
    const bare = await t.fetch(new Request(server.mcp_url, { headers: { authorization, accept: "text/event-stream" } }));
    expect(bare.status).toBe(400);
    const json = await t.fetch(
      new Request(server.mcp_url, {
        headers: { authorization, accept: "application/json", "mcp-session-id": transport.sessionId! },
      }),
    );
    expect(json.status).toBe(400);
    await mcp.close();
  });

  test("a call's _meta goes on without the client's progress token, and a null one as none", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp } = await client(server.mcp_url);
    for (const _meta of [null, { "example.com/trace": "t-1" }, {}]) {
      const params = { name: "one__echo", arguments: { message: JSON.stringify(_meta) }, _meta } as never;
      const result = await mcp.request({ method: "tools/call", params }, CallToolResultSchema);
      expect(toolText(result)).toBe(`one: ${JSON.stringify(_meta)}`);
    }
    await mcp.close();
  });

  test("a call's _meta that is not an object, or a progress token neither a string nor a number, is -32602 and reaches no member", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp } = await client(server.mcp_url);
    const before = one.calls.get("echo") ?? 0;
    for (const _meta of ["abc", [1, 2], 5, true, { progressToken: { a: 1 } }, { progressToken: null }]) {
      const params = { name: "one__echo", arguments: { message: "x" }, _meta } as never;
      const refused = await mcp.request({ method: "tools/call", params }, CallToolResultSchema).catch((e: Error) => e);
      expect((refused as { code?: number }).code).toBe(-32602);
    }
    // Before, "abc" reached the member as {"0": "a", "1": "b", "2": "c"}, and 5 or [1, 2] as no _meta at all.
    expect(one.calls.get("echo") ?? 0).toBe(before);
    await mcp.close();
  });

  test("MCP-Protocol-Version: any session-era version the SDK knows is accepted on a session, another is a 400", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const { mcp, transport } = await client(server.mcp_url);
    const ping = (version: string) =>
      t.fetch(
        new Request(server.mcp_url, {
          method: "POST",
          body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }),
          headers: {
            authorization: `Bearer ${alice.token}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-session-id": transport.sessionId!,
            "mcp-protocol-version": version,
          },
        }),
      );
    expect((await ping("2025-03-26")).status).toBe(200);
    const refused = await ping("1999-01-01");
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.message).toContain("1999-01-01 is not supported");
    await mcp.close();
  });

  test("no credentials: 401 with a challenge", async () => {
    const server = await virtualServer([{ connector_id: idOne, prefix: "one" }]);
    const res = await t.fetch(
      new Request(server.mcp_url, { method: "POST", body: "{}", headers: { "content-type": "application/json" } }),
    );
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain("Basic");
  });
});

describe("conflicts", () => {
  test("a URI two members offer and a name too long are left out, and the resource reports them after a listing", async () => {
    const twinA = await startLabelledServer("twin");
    const twinB = await startLabelledServer("twin");
    const long = pagedToolsServer(["short", "a".repeat(63)], 10);
    const longPeer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: long.handler });
    try {
      const idA = await connectedConnector(alice.api, twinA.url);
      const idB = await connectedConnector(alice.api, twinB.url);
      const idLong = await connectedConnector(alice.api, `http://127.0.0.1:${longPeer.port}/mcp`);
      const server = await virtualServer([
        { connector_id: idA, prefix: "a" },
        { connector_id: idB, prefix: "b" },
        { connector_id: idLong, prefix: "p" },
      ]);
      expect((await alice.api("GET", `/api/v1/virtual-servers/${server.id}`)).body.conflicts).toEqual([]);
      const { mcp } = await client(server.mcp_url);
      const tools = (await allTools(mcp)).names;
      expect(tools).toContain("p__short");
      expect(tools.filter((name) => name.startsWith("p__"))).toEqual(["p__short"]);
      expect((await mcp.listResources()).resources).toEqual([]);
      const unread = await mcp.readResource({ uri: "test://twin/readme" }).catch((e: Error) => e);
      expect((unread as { code?: number }).code).toBe(-32602);
      // A URI only the twins' same template matches: that template was left out, so it routes nowhere.
      const unmatched = await mcp.readResource({ uri: "test://twin/notes/1" }).catch((e: Error) => e);
      expect((unmatched as { code?: number }).code).toBe(-32602);
      const conflicts = (await alice.api("GET", `/api/v1/virtual-servers/${server.id}`)).body.conflicts;
      expect(conflicts).toEqual([
        { kind: "tool", name: `p__${"a".repeat(63)}`, members: [idLong] },
        { kind: "resource", name: "test://twin/readme", members: [idA, idB] },
        { kind: "resource_template", name: "test://twin/notes/{id}", members: [idA, idB] },
      ]);
      await mcp.close();
    } finally {
      await twinA.stop();
      await twinB.stop();
      longPeer.stop(true);
    }
  });
});

describe("hostile messages", () => {
  /** A virtual server of no members, a session of it, and a way to POST raw bodies in that session. */
  async function rawSession(app: TestApp, token: string) {
    const created = await app.apiOf({ token })("POST", "/api/v1/virtual-servers", { body: { name: "Raw", members: [] } });
    expect(created.status).toBe(201);
    const url = created.body.mcp_url as string;
    const post = (body: BodyInit, sessionId?: string) =>
      app.fetch(
        new Request(url, {
          method: "POST",
          body,
          headers: {
            authorization: `Bearer ${token}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...(sessionId && { "mcp-session-id": sessionId }),
          },
        }),
      );
    const init = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } };
    const opened = await post(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: init }));
    expect(opened.status).toBe(200);
    return { post, sessionId: opened.headers.get("mcp-session-id")! };
  }

  test("PROXY__MAX_MESSAGE_BYTES counts bytes, not UTF-16 code units, whether or not the length is declared", async () => {
    const small = await createTestApp({ env: { PROXY__MAX_MESSAGE_BYTES: "2048" } });
    try {
      const carol = await small.user("carol");
      const { post, sessionId } = await rawSession(small, carol.token);
      // 1,500 characters of three bytes each: 4.5 KB, over the limit, though fewer than 2,048 characters.
      const message = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "€".repeat(1500) } });
      expect(message.length).toBeLessThan(2048);
      expect(Buffer.byteLength(message)).toBeGreaterThan(2048);
      expect((await post(message, sessionId)).status).toBe(413);
      // The same bytes as a stream of unknown length (chunked): counted as they arrive, refused alike.
      const bytes = new TextEncoder().encode(message);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 512) controller.enqueue(bytes.slice(i, i + 512));
          controller.close();
        },
      });
      expect((await post(stream, sessionId)).status).toBe(413);
      // Within the limit, in bytes: served.
      const fits = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping", params: { pad: "€".repeat(500) } });
      expect((await post(fits, sessionId)).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  test("a request whose id is not a string or a number is an invalid request (-32600), not taken for a notification", async () => {
    const { post, sessionId } = await rawSession(t, alice.token);
    const call = { method: "tools/call", params: { name: "one__echo", arguments: { message: "x" } } };
    for (const id of [{}, [1], true, null]) {
      const res = await post(JSON.stringify({ jsonrpc: "2.0", id, ...call }), sessionId);
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe(-32600);
    }
    // A method that is not a string is no request either.
    const odd = await post(JSON.stringify({ jsonrpc: "2.0", id: 3, method: 7 }), sessionId);
    expect(odd.status).toBe(400);
    expect((await odd.json()).error.code).toBe(-32600);
    // "" is a string id like any other (JSON-RPC 2.0 §4): the request is answered, not dropped as a notification.
    const empty = await post(JSON.stringify({ jsonrpc: "2.0", id: "", method: "ping" }), sessionId);
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual({ jsonrpc: "2.0", id: "", result: {} });
    // Notifications and the client's responses are still accepted (202).
    expect((await post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), sessionId)).status).toBe(202);
    expect((await post(JSON.stringify({ jsonrpc: "2.0", id: "vs-99", result: {} }), sessionId)).status).toBe(202);
  });
});
