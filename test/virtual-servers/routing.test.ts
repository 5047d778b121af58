import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type ClientCapabilities,
} from "@modelcontextprotocol/sdk/types.js";
import { startInteractiveServer } from "../peers/interactive-server";
import { lateGate } from "../peers/late-gate";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, toolText } from "../support/mcp";
import { sseReader } from "../support/sse";
import { waitFor } from "../support/wait";

// What a virtual server relays besides plain calls (docs/interface.md §9.4; issue 24 item 8): cancellation and
// progress to the one member concerned, a member's requests to the client during a call, list changes, resource
// subscriptions, and the client's GET stream. The members are real SDK servers on loopback; the client is the SDK's.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const a = await startInteractiveServer("a");
const b = await startInteractiveServer("b");
let idA: string;
let idB: string;

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true });
  alice = await t.user("alice");
  idA = await connectedConnector(alice.api, a.url);
  idB = await connectedConnector(alice.api, b.url);
});
afterAll(async () => {
  await t.close();
  await a.stop();
  await b.stop();
});

async function virtualServer(members: { connector_id: string; prefix: string }[]) {
  const res = await alice.api("POST", "/api/v1/virtual-servers", { body: { name: "Talkative", members } });
  expect(res.status).toBe(201);
  return res.body as { id: string; mcp_url: string };
}

const both = () =>
  virtualServer([
    { connector_id: idA, prefix: "a" },
    { connector_id: idB, prefix: "b" },
  ]);

const fetchAs = (token: string, accept?: string) => (input: string | URL | Request, init?: RequestInit) => {
  const request = new Request(input, init);
  request.headers.set("authorization", `Bearer ${token}`);
  if (accept && request.method === "POST") request.headers.set("accept", accept);
  return t.fetch(request);
};

/** The SDK client with elicitation, sampling and roots, answering each with what names it (and the request's label). */
async function talkingClient(url: string, options: { accept?: string } = {}) {
  // The SDK client opens its GET stream just after initialize, without waiting: the test waits for it.
  let listening!: () => void;
  const listened = new Promise<void>((resolve) => (listening = resolve));
  const fetchFn = fetchAs(alice.token, options.accept);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (input, init) => {
      const response = await fetchFn(input, init);
      if (new Request(input, init).method === "GET" && response.ok) listening();
      return response;
    },
  });
  const mcp = new Client(
    { name: "routing-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } },
  );
  const asked: string[] = [];
  mcp.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(`elicit ${request.params.message}`);
    const colour = request.params.message.startsWith("a") ? "red" : "blue";
    return { action: "accept", content: { colour } };
  });
  mcp.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    asked.push("sample");
    const token = request.params._meta?.progressToken;
    if (token !== undefined)
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: 1 } });
    return { role: "assistant", model: "test", content: { type: "text", text: "sampled" } };
  });
  mcp.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push("roots");
    return { roots: [{ uri: "file:///work" }] };
  });
  await mcp.connect(transport);
  await listened;
  return { mcp, transport, asked };
}

/** An SDK client that opens no GET stream itself (its GET is answered 405 before it leaves), offering nothing unless told. */
async function plainClient(url: string, capabilities: ClientCapabilities = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: (input, init) =>
      new Request(input, init).method === "GET"
        ? Promise.resolve(new Response(null, { status: 405 }))
        : fetchAs(alice.token)(input, init),
  });
  const mcp = new Client({ name: "plain", version: "1.0.0" }, { capabilities });
  if (capabilities.elicitation) mcp.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
  await mcp.connect(transport);
  return { mcp, transport };
}

/** Lists (opening the members' sessions), then waits until each member listed has opened its GET stream too. */
async function listAndListen(mcp: Client, ...members: { seen: { listening: number } }[]) {
  const before = members.map((m) => m.seen.listening);
  const tools = (await mcp.listTools()).tools.map((tool) => tool.name);
  await waitFor("the members' GET streams", () => members.every((m, i) => m.seen.listening > before[i]!), 5_000);
  return tools;
}

describe("cancellation and progress", () => {
  test("a cancelled call is cancelled at its own member only; progress reaches its caller", async () => {
    const server = await both();
    const { mcp } = await talkingClient(server.mcp_url);
    const before = { a: a.seen.cancelled, b: b.seen.cancelled };
    const abort = new AbortController();
    let progressed = 0;
    const call = mcp
      .callTool({ name: "b__wait", arguments: {} }, undefined, {
        signal: abort.signal,
        onprogress: () => {
          progressed++;
          abort.abort("enough");
        },
      })
      .catch((e: Error) => e);
    expect(await call).toBeInstanceOf(Error);
    expect(progressed).toBe(1);
    await waitFor("member b's cancellation", () => b.seen.cancelled === before.b + 1, 5_000);
    await Bun.sleep(50);
    expect(a.seen.cancelled).toBe(before.a);
    expect(b.seen.cancelled).toBe(before.b + 1);
    // The session goes on.
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("a__wait");
    await mcp.close();
  });
  test("a call under way keeps its session in use: the idle limit passing during it ends neither", async () => {
    const server = await both();
    const { mcp } = await plainClient(server.mcp_url);
    const before = b.seen.cancelled;
    const abort = new AbortController();
    let progressed!: () => void;
    const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
    // A long tool reporting progress: its call may outlast the idle limit (each progress renews its timeout).
    const call = mcp
      .callTool({ name: "b__wait", arguments: {} }, undefined, { signal: abort.signal, onprogress: () => progressed() })
      .catch((e: Error) => e);
    await firstProgress;
    t.clock.advance(31 * 60_000);
    await t.runJobs();
    await Bun.sleep(200);
    // Before, the session was taken for idle (no request had started for 30 minutes): it ended, its call cancelled at
    // the member, and the client's next request was a 404.
    expect(b.seen.cancelled).toBe(before);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("b__wait");
    abort.abort("enough");
    await call;
    await waitFor("member b's cancellation", () => b.seen.cancelled === before + 1, 5_000);
    await mcp.close();
  });

  test("a member that goes down during a call with progress: the client is told at once which member and why", async () => {
    const d = await startInteractiveServer("d");
    try {
      const idD = await connectedConnector(alice.api, d.url);
      const server = await virtualServer([{ connector_id: idD, prefix: "d" }]);
      const { mcp } = await plainClient(server.mcp_url);
      let progressed!: () => void;
      const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
      // The client would wait 60 s by default; 10 s is ample for an answer that should come at once.
      const call = mcp
        .callTool({ name: "d__wait", arguments: {} }, undefined, { timeout: 10_000, onprogress: () => progressed() })
        .catch((e: Error) => e);
      await firstProgress;
      const started = performance.now();
      await d.stop();
      const failed = await call;
      // Before, the call's answer never came (the SDK client's request waited out its timeout): the client's own
      // timeout ended it, as -32001.
      expect((failed as { code?: number }).code).toBe(-32603);
      expect((failed as Error).message).toContain(`Member "d" (connector ${idD}) is unavailable`);
      expect(performance.now() - started).toBeLessThan(5_000);
      await mcp.close();
    } finally {
      await d.stop();
    }
  });
});

describe("a member's requests to the client during a call", () => {
  test("elicitation, sampling and roots are answered by the client through the virtual server", async () => {
    const server = await both();
    const { mcp, asked } = await talkingClient(server.mcp_url);
    const progress = { a: a.seen.progress, b: b.seen.progress };
    expect(toolText(await mcp.callTool({ name: "a__ask", arguments: {} }))).toBe("a: accept red; sampled; file:///work");
    expect(asked).toEqual(["elicit a wants a colour", "sample", "roots"]);
    // The client's progress on the member's sampling request reached that member, and only it.
    expect(a.seen.progress).toBe(progress.a + 1);
    expect(b.seen.progress).toBe(progress.b);
    await mcp.close();
  });

  test("two calls at one member asking at once: each request goes on its own call's stream", async () => {
    const server = await both();
    // The call whose note is "json" takes no event stream: its elicitation cannot go on it (and must not go on the
    // other call's).
    const fetchFn = fetchAs(alice.token);
    const transport = new StreamableHTTPClientTransport(new URL(server.mcp_url), {
      fetch: async (input, init) => {
        const request = new Request(input, init);
        if (request.method === "POST" && (await request.clone().text()).includes('"note":"json"'))
          request.headers.set("accept", "application/json");
        return fetchFn(request);
      },
    });
    const mcp = new Client({ name: "routing-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
    mcp.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
    await mcp.connect(transport);
    await mcp.listTools();
    const [json, streamed] = await Promise.all([
      mcp.callTool({ name: "a__elicit", arguments: { note: "json" } }),
      mcp.callTool({ name: "a__elicit", arguments: { note: "sse" } }),
    ]);
    expect(json.isError).toBe(true);
    expect(toolText(json)).toContain("text/event-stream");
    expect(toolText(streamed)).toBe("a: decline sse");
    await mcp.close();
  });

  test("a call whose client takes no event stream cannot carry them: the member gets an error", async () => {
    const server = await both();
    const { mcp } = await talkingClient(server.mcp_url, { accept: "application/json" });
    const result = await mcp.callTool({ name: "a__elicit", arguments: {} });
    expect(result.isError).toBe(true);
    expect(toolText(result)).toContain("text/event-stream");
    await mcp.close();
  });

  test("a member that gives up on its request: the client is told (notifications/cancelled)", async () => {
    const server = await both();
    const { mcp } = await plainClient(server.mcp_url, { elicitation: { form: {} } });
    let aborted = false;
    mcp.setRequestHandler(
      ElicitRequestSchema,
      (_request, extra) =>
        new Promise((resolve) =>
          extra.signal.addEventListener("abort", () => {
            aborted = true;
            resolve({ action: "cancel" });
          }),
        ),
    );
    expect(toolText(await mcp.callTool({ name: "a__impatient", arguments: {} }))).toBe("a: gave up");
    await waitFor("the client's handler aborted", () => aborted, 5_000);
    await mcp.close();
  });

  test("a call cancelled while its member's question waits: the member giving the question up later still tells the client", async () => {
    const server = await both();
    const { mcp } = await talkingClient(server.mcp_url);
    await listAndListen(mcp, a, b);
    const abort = new AbortController();
    let aborted = false;
    // The client is asked, and cancels the call rather than answer; the member gives its question up 100 ms later.
    mcp.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      abort.abort("never mind");
      return new Promise((resolve) =>
        extra.signal.addEventListener("abort", () => {
          aborted = true;
          resolve({ action: "cancel" });
        }),
      );
    });
    const call = await mcp
      .callTool({ name: "a__impatient", arguments: {} }, undefined, { signal: abort.signal })
      .catch((e: Error) => e);
    expect(call).toBeInstanceOf(Error);
    // Before, its notifications/cancelled went to the call's stream, ended by then, and was lost: the client's
    // question stayed open for ever.
    await waitFor("the client's handler aborted", () => aborted, 5_000);
    await mcp.close();
  });

  test("the client's roots change is told to the members it offered roots to", async () => {
    const server = await both();
    const { mcp } = await talkingClient(server.mcp_url);
    await mcp.listTools();
    const before = { a: a.seen.rootsChanged, b: b.seen.rootsChanged };
    await mcp.sendRootsListChanged();
    await waitFor("both members told", () => a.seen.rootsChanged > before.a && b.seen.rootsChanged > before.b, 5_000);
    await mcp.close();
  });

  test("a member's request outside any call goes on the client's GET stream, and its answer back", async () => {
    const server = await both();
    const { mcp, asked } = await talkingClient(server.mcp_url);
    await listAndListen(mcp, a, b);
    const before = a.seen.later.length;
    expect(toolText(await mcp.callTool({ name: "a__later", arguments: {} }))).toBe("a: later");
    await waitFor("member a's later elicitation answered", () => a.seen.later.length > before, 5_000);
    expect(a.seen.later.at(-1)).toBe("accept");
    expect(asked).toContain("elicit a later");
    await mcp.close();
  });

  test("in tool_mode search, call_tool carries the member's requests as a direct call does", async () => {
    const server = await both();
    const patched = await alice.api("PATCH", `/api/v1/virtual-servers/${server.id}`, { body: { tool_mode: "search" } });
    expect(patched.status).toBe(200);
    const { mcp } = await talkingClient(server.mcp_url);
    expect((await mcp.listTools()).tools.map((tool) => tool.name).sort()).toEqual(["call_tool", "search_tools"]);
    const result = await mcp.callTool({ name: "call_tool", arguments: { name: "b__ask", arguments: {} } });
    expect(toolText(result)).toBe("b: accept blue; sampled; file:///work");
    await mcp.close();
  });

  test("a member is offered elicitation, sampling and roots only if the client offered them", async () => {
    const server = await both();
    const talking = await talkingClient(server.mcp_url);
    const offered = JSON.parse(toolText(await talking.mcp.callTool({ name: "a__capabilities", arguments: {} })));
    expect(offered).toEqual({ elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } });
    await talking.mcp.close();
    const { mcp: plain } = await plainClient(server.mcp_url);
    expect(JSON.parse(toolText(await plain.callTool({ name: "a__capabilities", arguments: {} })))).toEqual({});
    await plain.close();
  });
});

describe("list changes and the GET stream", () => {
  test("a member's list_changed reaches the client and the next tools/list shows the change", async () => {
    const server = await both();
    const { mcp } = await talkingClient(server.mcp_url);
    expect(await listAndListen(mcp, a, b)).not.toContain("a__grown");
    let changes = 0;
    mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    expect(toolText(await mcp.callTool({ name: "a__grow", arguments: {} }))).toBe("a: grew");
    await waitFor("tools/list_changed", () => changes > 0, 5_000);
    expect(changes).toBe(1);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("a__grown");
    expect(toolText(await mcp.callTool({ name: "a__grown", arguments: {} }))).toBe("a: grown");
    await mcp.close();
  });

  test("a list change while a listing is being merged: the calls after it resolve through a new listing", async () => {
    // Member `late` is b behind a gate: while `delaying`, its tools/list answers come a second late.
    let delaying = false;
    const gate = lateGate(b.url, "tools/list", { delayMs: 1_000, delays: () => delaying });
    try {
      const idLate = await connectedConnector(alice.api, gate.url);
      const server = await virtualServer([
        { connector_id: idA, prefix: "a" },
        { connector_id: idLate, prefix: "late" },
      ]);
      const { mcp } = await talkingClient(server.mcp_url);
      expect(await listAndListen(mcp, a)).not.toContain("a__grown");
      let changes = 0;
      mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
      delaying = true;
      let listed = false;
      // a's list is read at once (before it grows), late's a second later.
      const listing = mcp.listTools().then(() => (listed = true));
      await Bun.sleep(100);
      expect(toolText(await mcp.callTool({ name: "a__grow", arguments: {} }))).toBe("a: grew");
      await waitFor("tools/list_changed", () => changes > 0, 5_000);
      expect(listed).toBe(false);
      await listing;
      delaying = false;
      // Before, the listing begun before the change was kept for the calls after it: a__grown was an unknown tool
      // until the client listed again.
      expect(toolText(await mcp.callTool({ name: "a__grown", arguments: {} }))).toBe("a: grown");
      await mcp.close();
    } finally {
      gate.stop();
    }
  });

  test("a member added by PATCH: one list_changed of each list, and the next listing has its tools; one removed: its session ends", async () => {
    const server = await virtualServer([{ connector_id: idA, prefix: "a" }]);
    const { mcp } = await talkingClient(server.mcp_url);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).not.toContain("b__ask");
    let changes = 0;
    mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    const patched = await alice.api("PATCH", `/api/v1/virtual-servers/${server.id}`, {
      body: {
        members: [
          { connector_id: idA, prefix: "a" },
          { connector_id: idB, prefix: "b" },
        ],
      },
    });
    expect(patched.status).toBe(200);
    await waitFor("tools/list_changed", () => changes > 0, 5_000);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("b__ask");
    expect(changes).toBe(1);

    // Member b leaves: told again, and the session's upstream session with b ends.
    const ended = b.sessions.ended;
    const left = await alice.api("PATCH", `/api/v1/virtual-servers/${server.id}`, {
      body: { members: [{ connector_id: idA, prefix: "a" }] },
    });
    expect(left.status).toBe(200);
    await waitFor("member b's session ended", () => b.sessions.ended === ended + 1, 5_000);
    await waitFor("tools/list_changed", () => changes === 2, 5_000);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).not.toContain("b__ask");
    await mcp.close();
  });

  test("a member connector deleted: the client is told its lists changed", async () => {
    const c = await startInteractiveServer("c");
    try {
      const idC = await connectedConnector(alice.api, c.url);
      const server = await virtualServer([
        { connector_id: idA, prefix: "a" },
        { connector_id: idC, prefix: "c" },
      ]);
      const { mcp } = await talkingClient(server.mcp_url);
      expect(await listAndListen(mcp, a, c)).toContain("c__ask");
      let changes = 0;
      mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
      expect((await alice.api("DELETE", `/api/v1/connectors/${idC}`)).status).toBe(204);
      await waitFor("tools/list_changed", () => changes > 0, 5_000);
      expect((await mcp.listTools()).tools.map((tool) => tool.name)).not.toContain("c__ask");
      await mcp.close();
    } finally {
      await c.stop();
    }
  });

  test("GET: one event stream per session (a second is 409, another once it ended); none without a session", async () => {
    const server = await both();
    const { mcp, transport } = await plainClient(server.mcp_url);
    const headers = {
      authorization: `Bearer ${alice.token}`,
      accept: "text/event-stream",
      "mcp-session-id": transport.sessionId!,
    };
    const first = await t.fetch(new Request(server.mcp_url, { headers }));
    expect(first.status).toBe(200);
    const second = await t.fetch(new Request(server.mcp_url, { headers }));
    expect(second.status).toBe(409);
    expect(second.headers.get("content-type")).toStartWith("application/problem+json");
    // The first ended (its client went away): the session may open another.
    await first.body!.cancel();
    const third = await t.fetch(new Request(server.mcp_url, { headers }));
    expect(third.status).toBe(200);
    await third.body!.cancel();
    const none = await t.fetch(
      new Request(server.mcp_url, { headers: { authorization: headers.authorization, accept: headers.accept } }),
    );
    expect(none.status).toBe(400);
    await mcp.close();
  });

  test("the client's GET stream closed: a member whose GET stream resumes with Last-Event-ID is not listened to any more", async () => {
    const r = await startInteractiveServer("r", { resumable: true });
    try {
      const idR = await connectedConnector(alice.api, r.url);
      const server = await virtualServer([{ connector_id: idR, prefix: "r" }]);
      const { mcp, transport } = await plainClient(server.mcp_url);
      const res = await t.fetch(
        new Request(server.mcp_url, {
          headers: {
            authorization: `Bearer ${alice.token}`,
            accept: "text/event-stream",
            "mcp-session-id": transport.sessionId!,
          },
        }),
      );
      const events = sseReader(res);
      await listAndListen(mcp, r);
      // An event on the member's GET stream, with an id: what the SDK client resumes that stream from.
      await mcp.callTool({ name: "r__grow", arguments: {} });
      expect(JSON.parse((await events.nextEvent()).data)).toEqual({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      const listening = r.seen.listening;
      await events.close();
      // The SDK client opens a GET stream that ended again after a second; a resumption is a GET stream too (before,
      // it went to the member unchecked, and stayed open after the client's had gone, beyond unlisten's reach).
      await Bun.sleep(2_500);
      expect(r.seen.listening).toBe(listening);
      await mcp.close();
    } finally {
      await r.stop();
    }
  });

  test("two sessions of one user stay apart: a change in one member session reaches its own client only", async () => {
    const server = await both();
    const one = await talkingClient(server.mcp_url);
    const two = await talkingClient(server.mcp_url);
    await listAndListen(one.mcp, a, b);
    await listAndListen(two.mcp, a, b);
    const changes = { one: 0, two: 0 };
    one.mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.one++);
    two.mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.two++);
    // Each client session has its own upstream session: "grow" adds the tool in session one's only.
    await one.mcp.callTool({ name: "b__grow", arguments: {} });
    await waitFor("session one's tools/list_changed", () => changes.one > 0, 5_000);
    await Bun.sleep(100);
    expect(changes.two).toBe(0);
    expect((await two.mcp.listTools()).tools.map((tool) => tool.name)).not.toContain("b__grown");
    expect(toolText(await two.mcp.callTool({ name: "b__ask", arguments: {} }))).toStartWith("b: accept blue");
    expect(one.asked).toEqual([]);
    await one.mcp.close();
    await two.mcp.close();
  });
});

describe("resource subscriptions", () => {
  test("resources/subscribe goes to the owner of the URI; its updates reach the client's GET stream", async () => {
    const server = await both();
    const { mcp } = await talkingClient(server.mcp_url);
    const updated: string[] = [];
    mcp.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    await listAndListen(mcp, a, b);
    await mcp.subscribeResource({ uri: "test://b/status" });
    expect(b.seen.subscribed.at(-1)).toBe("test://b/status");
    expect(a.seen.subscribed).not.toContain("test://b/status");
    await mcp.callTool({ name: "b__touch", arguments: {} });
    await waitFor("notifications/resources/updated", () => updated.length > 0, 5_000);
    expect(updated).toEqual(["test://b/status"]);
    await mcp.unsubscribeResource({ uri: "test://b/status" });
    expect(b.seen.unsubscribed.at(-1)).toBe("test://b/status");
    const unknown = await mcp.subscribeResource({ uri: "test://nowhere" }).catch((e: Error) => e);
    expect((unknown as { code?: number }).code).toBe(-32602);
    await mcp.close();
  });
});

// A raw GET stream, read event by event, for what the SDK client does not show.
test("the GET stream is text/event-stream and ends with the session", async () => {
  const server = await both();
  const { mcp, transport: plain } = await plainClient(server.mcp_url);
  const res = await t.fetch(
    new Request(server.mcp_url, {
      headers: { authorization: `Bearer ${alice.token}`, accept: "text/event-stream", "mcp-session-id": plain.sessionId! },
    }),
  );
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const events = sseReader(res);
  // The members' sessions open (and their GET streams with them) at the first listing.
  await listAndListen(mcp, a, b);
  await mcp.callTool({ name: "a__grow", arguments: {} });
  const event = await events.nextEvent();
  expect(JSON.parse(event.data)).toEqual({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  await plain.terminateSession();
  await expect(events.next()).rejects.toThrow("the stream ended");
  await mcp.close();
});

test("an idle session's GET stream ends with it", async () => {
  const server = await both();
  const { mcp, transport } = await plainClient(server.mcp_url);
  const res = await t.fetch(
    new Request(server.mcp_url, {
      headers: { authorization: `Bearer ${alice.token}`, accept: "text/event-stream", "mcp-session-id": transport.sessionId! },
    }),
  );
  const events = sseReader(res);
  expect((await events.next()).comment).toBe("connected");
  t.clock.advance(31 * 60_000);
  // Another session opening sweeps the idle one.
  const other = await plainClient(server.mcp_url);
  await expect(events.next()).rejects.toThrow("the stream ended");
  await other.mcp.close();
  await mcp.close();
});
