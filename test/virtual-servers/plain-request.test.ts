import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, ResultSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { messageReadAlready } from "../../src/http/read-already";
import { Cancel, cancellationOf } from "../../src/virtual-servers/cancellation";
import { sendPlain, type PlainSession } from "../../src/virtual-servers/plain-request";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// A plain request on a member's session (src/virtual-servers/plain-request.ts), sent without the SDK client: each
// answer gives what the SDK client gives for it — the same result, the same error.

type Answer = (id: string | number) => Response;
const SESSION = "session-1";
const VERSION = "2025-11-25";

const json = (body: unknown, status = 200) => Response.json(body, { status });
const events = (...blocks: string[]) => new Response(blocks.join(""), { headers: { "content-type": "text/event-stream" } });
const event = (message: unknown, id?: string) => `${id === undefined ? "" : `id: ${id}\n`}data: ${JSON.stringify(message)}\n\n`;

/** What the SDK client makes of `answer` to a tools/call on an open session: its result, or its error. */
async function throughSdk(answer: Answer) {
  const transport = new StreamableHTTPClientTransport(new URL("http://member.invalid/mcp"), {
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.method !== "POST") return new Response(null, { status: 405 });
      const message = (await request.json()) as { id?: string | number; method: string };
      if (message.method === "initialize")
        return Response.json(
          {
            jsonrpc: "2.0",
            id: message.id,
            result: { protocolVersion: VERSION, capabilities: { tools: {} }, serverInfo: { name: "member", version: "1" } },
          },
          { headers: { "mcp-session-id": SESSION } },
        );
      if (message.id === undefined) return new Response(null, { status: 202 });
      return answer(message.id);
    },
  });
  const client = new Client({ name: "test", version: "1" });
  await client.connect(transport);
  try {
    return {
      result: await client.request({ method: "tools/call", params: { name: "t" } }, ResultSchema.passthrough(), { timeout: 300 }),
    };
  } catch (error) {
    return { error };
  } finally {
    await client.close();
  }
}

/** The member session a plain request is sent on, answering with `answer`; what it sent, delivered and cancelled. */
function member(answer: Answer) {
  const sent: Request[] = [];
  const bodies: { id: string; method: string; params?: unknown }[] = [];
  const delivered: JSONRPCMessage[] = [];
  const cancelled: { requestId: string; reason: string }[] = [];
  const session: PlainSession = {
    url: "http://member.invalid/mcp",
    sessionId: SESSION,
    protocolVersion: VERSION,
    async fetch(request) {
      sent.push(request);
      if (request.method === "POST") {
        // Sent in-process, with its message rather than a body (http/read-already.ts).
        const body = messageReadAlready(request)!.message as (typeof bodies)[number];
        bodies.push(body);
        return answer(body.id);
      }
      return answer(bodies.at(-1)!.id);
    },
    deliver: (message) => void delivered.push(message),
    cancel: (requestId, reason) => void cancelled.push({ requestId, reason }),
  };
  return { session, sent, bodies, delivered, cancelled };
}

async function throughPlain(answer: Answer) {
  const { session } = member(answer);
  try {
    return { result: await sendPlain(session, "vs-1", "tools/call", { name: "t" }, { timeout: 300 }) };
  } catch (error) {
    return { error };
  }
}

/** An outcome as a caller sees it: the result, or the error's class, code and message. */
const seen = (outcome: { result?: unknown; error?: unknown }) =>
  outcome.error === undefined
    ? { result: outcome.result }
    : {
        error: (outcome.error as Error).constructor.name,
        code: (outcome.error as { code?: unknown }).code,
        message: (outcome.error as Error).message,
        data: (outcome.error as { data?: unknown }).data,
      };

describe("a plain request's outcome is the SDK client's", () => {
  const answers: Record<string, Answer> = {
    "a result": (id) => json({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "hi" }] } }),
    "a result with _meta": (id) => json({ jsonrpc: "2.0", id, result: { content: [], _meta: { note: "x" } } }),
    "a result whose _meta is not an object": (id) => json({ jsonrpc: "2.0", id, result: { content: [], _meta: 5 } }),
    "a result that is not an object": (id) => json({ jsonrpc: "2.0", id, result: 5 }),
    "an answer with a member too many": (id) => json({ jsonrpc: "2.0", id, result: {}, extra: 1 }),
    "the member's error": (id) => json({ jsonrpc: "2.0", id, error: { code: -32602, message: "Bad name", data: { why: 1 } } }),
    "the member's error with a code that is not an integer": (id) =>
      json({ jsonrpc: "2.0", id, error: { code: 1.5, message: "x" } }),
    "an HTTP error": () => new Response("it broke", { status: 500 }),
    "a forgotten session (404)": () =>
      json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }, 404),
    "an unexpected content type": () => new Response("hello", { headers: { "content-type": "text/plain" } }),
    "an answer on an event stream": (id) => events(event({ jsonrpc: "2.0", id, result: { content: [] } })),
    "an error on an event stream": (id) => events(event({ jsonrpc: "2.0", id, error: { code: -32000, message: "No" } })),
    "no answer (a timeout)": () =>
      json({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x" } }),
  };
  for (const [name, answer] of Object.entries(answers))
    test(name, async () => {
      const [sdk, plain] = await Promise.all([throughSdk(answer), throughPlain(answer)]);
      expect(seen(plain)).toEqual(seen(sdk));
    });
});

describe("a plain request", () => {
  test("is one POST on the member's session, with an id of its own; the answer's id is not the client's concern", async () => {
    const m = member((id) => json({ jsonrpc: "2.0", id, result: { ok: true } }));
    expect(await sendPlain(m.session, "vs-7", "tools/call", { name: "echo" }, { timeout: 1000 })).toEqual({ ok: true });
    expect(m.sent).toHaveLength(1);
    expect(m.sent[0]!.headers.get("mcp-session-id")).toBe(SESSION);
    expect(m.sent[0]!.headers.get("mcp-protocol-version")).toBe(VERSION);
    expect(m.sent[0]!.headers.get("accept")).toBe("application/json, text/event-stream");
    expect(m.bodies).toEqual([{ jsonrpc: "2.0", id: "vs-7", method: "tools/call", params: { name: "echo" } } as never]);
  });

  test("a forgotten session is a StreamableHTTPError 404, what the member session reopens on", async () => {
    const m = member(() => new Response("gone", { status: 404 }));
    const error = await sendPlain(m.session, "vs-1", "tools/call", {}, { timeout: 1000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(404);
  });

  test("the member's messages on the answer's stream go to the SDK client, before and after the answer", async () => {
    const m = member((id) =>
      events(
        ": a comment\n\n",
        event({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "before" } }, "e1"),
        event({ jsonrpc: "2.0", id: 0, method: "elicitation/create", params: { message: "?" } }, "e2"),
        "data: not json\n\n",
        event({ jsonrpc: "2.0", id, result: { content: [] } }, "e3"),
        event({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "after" } }),
      ),
    );
    expect(await sendPlain(m.session, "vs-1", "tools/call", {}, { timeout: 1000 })).toEqual({ content: [] });
    await Bun.sleep(10);
    expect(m.delivered.map((d) => ("method" in d ? d.method : "answer"))).toEqual([
      "notifications/message",
      "elicitation/create",
      "notifications/message",
    ]);
  });

  test("an event split across chunks, with CRLF line ends and several data lines, is read whole", async () => {
    const text = `id: 1\r\ndata: {"jsonrpc":"2.0",\r\ndata: "id":"vs-1","result":{"a":1}}\r\n\r\n`;
    const bytes = new TextEncoder().encode(text);
    const m = member(
      () =>
        new Response(
          new ReadableStream({
            start(controller) {
              for (let i = 0; i < bytes.length; i += 7) controller.enqueue(bytes.slice(i, i + 7));
              controller.close();
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
    );
    expect(await sendPlain(m.session, "vs-1", "tools/call", {}, { timeout: 1000 })).toEqual({ a: 1 });
  });

  test("a stream that ends before the answer after an event id is resumed with Last-Event-ID (basic/transports)", async () => {
    let posts = 0;
    const m = member((id) =>
      posts++ === 0
        ? events("retry: 5\n\n", event({ jsonrpc: "2.0", method: "notifications/message", params: {} }, "e1"))
        : events(event({ jsonrpc: "2.0", id, result: { resumed: true } }, "e2")),
    );
    expect(await sendPlain(m.session, "vs-1", "tools/call", {}, { timeout: 1000 })).toEqual({ resumed: true });
    expect(m.sent.map((r) => r.method)).toEqual(["POST", "GET"]);
    expect(m.sent[1]!.headers.get("last-event-id")).toBe("e1");
    expect(m.sent[1]!.headers.get("mcp-session-id")).toBe(SESSION);
  });

  test("a stream that ends before the answer without an event id fails at once", async () => {
    const m = member(() => events(event({ jsonrpc: "2.0", method: "notifications/message", params: {} })));
    await expect(sendPlain(m.session, "vs-1", "tools/call", {}, { timeout: 5000 })).rejects.toThrow(/ended before its answer/);
  });

  test("a timeout is the SDK's -32001, and the member is told the request is cancelled", async () => {
    const m = member(() => new Response(new ReadableStream(), { headers: { "content-type": "text/event-stream" } }));
    const error = await sendPlain(m.session, "vs-3", "tools/call", {}, { timeout: 20 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32001);
    expect(m.cancelled).toEqual([{ requestId: "vs-3", reason: expect.stringContaining("Request timed out") }]);
  });

  test.each([
    ["a client's cancellation", () => new Cancel()],
    [
      "an AbortSignal",
      () => {
        const controller = new AbortController();
        return Object.assign(cancellationOf(controller.signal), { abort: (reason: string) => controller.abort(reason) });
      },
    ],
  ])("%s cancels the request at the member; one cancelled before sending sends nothing", async (_, made) => {
    const m = member(() => new Response(new ReadableStream(), { headers: { "content-type": "text/event-stream" } }));
    const cancel = made();
    const pending = sendPlain(m.session, "vs-4", "tools/call", {}, { timeout: 5000, cancel });
    cancel.abort("Cancelled by the client");
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(m.cancelled).toEqual([{ requestId: "vs-4", reason: "Cancelled by the client" }]);

    const before = m.sent.length;
    await expect(sendPlain(m.session, "vs-5", "tools/call", {}, { timeout: 5000, cancel })).rejects.toBe(
      "Cancelled by the client",
    );
    expect(m.sent.length).toBe(before);
  });
});

// Through a virtual server: a member answering with JSON and one answering with event streams, each call made plainly
// and with a progress token (the SDK client's own path), gives the client the same answer.
describe("through a virtual server", () => {
  let t: TestApp;
  let alice: Awaited<ReturnType<TestApp["user"]>>;
  let jsonMember: Awaited<ReturnType<typeof startLabelledServer>>;
  let streamMember: Awaited<ReturnType<typeof startLabelledServer>>;
  let mcpUrl: string;
  beforeAll(async () => {
    jsonMember = await startLabelledServer("json", { json: true });
    streamMember = await startLabelledServer("stream");
    t = await createTestApp({ realNetwork: true });
    alice = await t.user("alice");
    const json = await connectedConnector(alice.api, jsonMember.url);
    const stream = await connectedConnector(alice.api, streamMember.url);
    for (const id of [json, stream])
      expect((await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: { deny: ["secret"] } } })).status).toBe(
        200,
      );
    const res = await alice.api("POST", "/api/v1/virtual-servers", {
      body: {
        name: "Both",
        members: [
          { connector_id: json, prefix: "json" },
          { connector_id: stream, prefix: "stream" },
        ],
      },
    });
    expect(res.status).toBe(201);
    mcpUrl = (res.body as { mcp_url: string }).mcp_url;
  });
  afterAll(async () => {
    await t.close();
    await jsonMember.stop();
    await streamMember.stop();
  });

  /** A session of the virtual server; `post` sends one message on it and gives the JSON-RPC answer the client reads. */
  async function session() {
    const headers = (extra: Record<string, string> = {}) => ({
      authorization: `Bearer ${alice.token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...extra,
    });
    const opened = await t.fetch(
      new Request(mcpUrl, {
        method: "POST",
        headers: headers(),
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "test", version: "1" } },
        }),
      }),
    );
    const id = opened.headers.get("mcp-session-id")!;
    const post = async (message: Record<string, unknown>) => {
      const res = await t.fetch(
        new Request(mcpUrl, { method: "POST", headers: headers({ "mcp-session-id": id }), body: JSON.stringify(message) }),
      );
      if (res.status === 202) return undefined;
      const text = await res.text();
      if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) return JSON.parse(text);
      // The answer is the stream's last message (progress comes before it).
      const data = text.split("\n").filter((line) => line.startsWith("data: "));
      return JSON.parse(data.at(-1)!.slice(6));
    };
    await post({ jsonrpc: "2.0", method: "notifications/initialized" });
    return { post };
  }

  test("a plain call's answer is the one the SDK client's path gives, for a member answering JSON and one streaming", async () => {
    const { post } = await session();
    for (const prefix of ["json", "stream"]) {
      const params = { name: `${prefix}__echo`, arguments: { message: "hi" } };
      const plain = await post({ jsonrpc: "2.0", id: 1, method: "tools/call", params });
      const sdk = await post({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { ...params, _meta: { progressToken: "p" } },
      });
      expect(plain).toEqual({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: `${prefix}: hi` }] } });
      expect(plain).toEqual(sdk);
      // A tool its member's policy hides is refused the same way on both paths, and never reaches the member.
      const hidden = { name: `${prefix}__secret`, arguments: {} };
      const refusedPlain = await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: hidden });
      const refusedSdk = await post({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { ...hidden, _meta: { progressToken: "q" } },
      });
      expect(refusedPlain.error).toMatchObject({ code: -32602, message: `Unknown tool: ${prefix}__secret` });
      expect(refusedPlain).toEqual(refusedSdk);
    }
    expect(jsonMember.calls.get("secret") ?? 0).toBe(0);
    expect(streamMember.calls.get("secret") ?? 0).toBe(0);
  });

  test("a member answering JSON that forgot the session (404) mid-way is reopened and the plain call answered", async () => {
    const { post } = await session();
    const call = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "json__echo", arguments: { message: "a" } } };
    expect((await post(call)).result).toEqual({ content: [{ type: "text", text: "json: a" }] });
    const started = jsonMember.sessions.started;
    await jsonMember.restart();
    expect((await post(call)).result).toEqual({ content: [{ type: "text", text: "json: a" }] });
    expect(jsonMember.sessions.started).toBe(started + 1);
  });
});
