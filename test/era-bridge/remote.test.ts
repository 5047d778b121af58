import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { startEverything, type Peer } from "../peers/everything";
import { startModernServer } from "../peers/mcp-proxy";
import { freePort } from "../peers/ports";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, toolText } from "../support/mcp";
import { cancelMidway, expectBothEras, MODERN, modernClient, modernRequest } from "../support/modern";

// A 2026-07-28 client (the MCP SDK v2 client pinned to it, and raw requests) in front of a remote server that speaks
// only the 2025 session era: server-everything over Streamable HTTP, reached by the service over a real socket through
// a recording forwarder (what the server was sent, and a server that forgets its sessions). Clients reach the service
// through `app.handle`.
type Sent = { id?: unknown; method?: string; params?: unknown; session: string | null };
let everything: Peer;
let modernServer: Peer;
let recorder: ReturnType<typeof Bun.serve>;
let recorderUrl: string;
const sent: Sent[] = [];
/** Sessions the forwarder answers 404 for from now on, as a server that restarted would. */
const forgotten = new Set<string>();
let t: TestApp;

beforeAll(async () => {
  [everything, modernServer, t] = await Promise.all([
    startEverything(),
    startModernServer(),
    createTestApp({ realNetwork: true }),
  ]);
  const port = await freePort();
  recorder = Bun.serve({
    hostname: "127.0.0.1",
    port,
    idleTimeout: 0,
    async fetch(request) {
      const session = request.headers.get("mcp-session-id");
      if (session && forgotten.has(session))
        return Response.json(
          { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } },
          { status: 404 },
        );
      const body = request.method === "POST" ? await request.text() : undefined;
      if (body) for (const m of [JSON.parse(body)].flat()) sent.push({ ...m, session });
      const headers = new Headers(request.headers);
      headers.delete("host");
      return fetch(everything.url, { method: request.method, headers, body, signal: request.signal });
    },
  });
  recorderUrl = `http://127.0.0.1:${port}/mcp`;
}, 30_000);
afterAll(async () => {
  await t.close();
  recorder.stop(true);
  await Promise.all([everything.stop(), modernServer.stop()]);
});

const proxyUrl = (id: string) => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
const as = (token: string) => (request: Request) => {
  const headers = new Headers(request.headers);
  headers.set("authorization", `Bearer ${token}`);
  return t.handle(new Request(request, { headers }));
};

describe("a 2025-only remote server", () => {
  test("connect records the eras the server speaks: initialize's only", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const { body } = await t.api("GET", `/api/v1/connectors/${id}`);
    expect(body.protocol_versions).toEqual(["2025-11-25"]);
  });

  test("serves 2026-07-28 clients through the bridge, and 2025 sessions as before, at once", async () => {
    const id = await connectedConnector(t.api, recorderUrl);
    await expectBothEras(proxyUrl(id), as(t.admin.token));
    // The modern requests reached the server as requests of one 2025 session, under ids of the bridge's own.
    const calls = sent.filter((m) => m.method === "tools/call" && (m.params as { name?: string }).name === "get-sum");
    expect(calls.length).toBe(3);
    expect(new Set(calls.map((m) => m.session)).size).toBe(1);
    expect(new Set(calls.map((m) => m.id)).size).toBe(3);
    expect(calls.every((m) => m.id !== 1)).toBe(true);
  });

  test("server/discover is answered from the server's initialize", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const response = await as(t.admin.token)(modernRequest(proxyUrl(id), { method: "server/discover" }));
    expect(response.status).toBe(200);
    const { result } = await response.json();
    expect(result).toMatchObject({ supportedVersions: [MODERN], resultType: "complete" });
    expect(result.capabilities.tools).toBeDefined();
    expect(result._meta["io.modelcontextprotocol/serverInfo"].name).toContain("everything");
  });

  test("a client that goes away mid-call: the server gets notifications/cancelled for it", async () => {
    const id = await connectedConnector(t.api, recorderUrl);
    await cancelMidway(proxyUrl(id), as(t.admin.token), () => sent);
  });

  test("a call that outlasts the service's access rechecks (over a second) keeps its one stream: each step once", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const modern = await modernClient(proxyUrl(id), as(t.admin.token));
    const steps: number[] = [];
    const result = await modern.client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 3, steps: 3 } },
      { onprogress: (p) => void steps.push(p.progress), timeout: 20_000 },
    );
    expect(toolText(result)).toContain("Steps: 3");
    // A bridged request's upstream stream cut by a recheck of a credential it does not carry was resumed, and its
    // progress came twice.
    expect(steps).toEqual([1, 2, 3]);
    await modern.close();
  });

  test("a bridged event stream holds the caller's place and ends when the caller loses access", async () => {
    const dana = await t.user(`dana-${crypto.randomUUID().slice(0, 8)}`);
    const id = await connectedConnector(dana.api, everything.url);
    const listen = await as(dana.token)(
      modernRequest(proxyUrl(id), { method: "subscriptions/listen", params: { notifications: { toolsListChanged: true } } }),
    );
    expect(listen.headers.get("content-type")).toContain("text/event-stream");
    const reader = listen.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("subscriptions");
    expect((await t.api("PATCH", `/api/v1/users/${dana.principal.id}`, { body: { disabled: true } })).status).toBe(200);
    // The access watch rechecks every second: the stream ends soon after.
    const ended = await Promise.race([
      (async () => {
        for (let r = await reader.read(); !r.done; r = await reader.read());
        return true;
      })(),
      Bun.sleep(5_000).then(() => false),
    ]);
    expect(ended).toBe(true);
  });

  test("a session the server forgot (404) is opened again transparently", async () => {
    const id = await connectedConnector(t.api, recorderUrl);
    const modern = await modernClient(proxyUrl(id), as(t.admin.token));
    expect(toolText(await modern.client.callTool({ name: "echo", arguments: { message: "one" } }))).toBe("Echo: one");
    const first = sent.findLast((m) => m.method === "tools/call")!.session!;
    forgotten.add(first);
    const initializes = sent.filter((m) => m.method === "initialize").length;
    expect(toolText(await modern.client.callTool({ name: "echo", arguments: { message: "two" } }))).toBe("Echo: two");
    const second = sent.findLast((m) => m.method === "tools/call")!.session!;
    expect(second).not.toBe(first);
    expect(sent.filter((m) => m.method === "initialize").length).toBe(initializes + 1);
    await modern.close();
  });

  test("the tool policy and the audit trail apply to bridged requests", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const policy = { deny: ["get-env"], rename: { echo: "say" } };
    expect((await t.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: policy } })).status).toBe(200);
    const modern = await modernClient(proxyUrl(id), as(t.admin.token));
    const names = (await modern.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain("say");
    expect(names).not.toContain("echo");
    expect(names).not.toContain("get-env");
    expect(toolText(await modern.client.callTool({ name: "say", arguments: { message: "bridged" } }))).toBe("Echo: bridged");
    await expect(modern.client.callTool({ name: "get-env", arguments: {} })).rejects.toThrow();
    await modern.close();
    await t.services.audit.flush();
    const audit = await t.api("GET", `/api/v1/audit?connector_id=${id}&method=tools/call`);
    expect(audit.body.items.map((r: { name: string; outcome: string }) => `${r.name} ${r.outcome}`)).toContain("say result");
  });

  test("another user's 2026-07-28 request is refused as at the proxy, before any bridge opens", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const other = await t.user(`other-${crypto.randomUUID().slice(0, 8)}`);
    const response = await as(other.token)(modernRequest(proxyUrl(id), { method: "tools/list" }));
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
  });

  test("routing-header errors are answered before the bridge: -32020 and -32022", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const call = { method: "tools/call", params: { name: "echo", arguments: { message: "x" } } };
    const named = await as(t.admin.token)(modernRequest(proxyUrl(id), call, { "mcp-name": "get-sum" }));
    expect(named.status).toBe(400);
    expect((await named.json()).error.code).toBe(-32020);
    const unknown = await as(t.admin.token)(modernRequest(proxyUrl(id), call, {}, "2031-01-01"));
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error).toMatchObject({ code: -32022, data: { supported: [MODERN] } });
  });
});

describe("a server that speaks both eras", () => {
  test("connect records both, and 2026-07-28 requests are relayed without translation", async () => {
    const id = await connectedConnector(t.api, modernServer.url);
    const { body } = await t.api("GET", `/api/v1/connectors/${id}`);
    expect(body.protocol_versions).toContain(MODERN);
    expect(body.protocol_versions).toContain("2025-11-25");
    const modern = await modernClient(proxyUrl(id), as(t.admin.token));
    expect(toolText(await modern.client.callTool({ name: "echo", arguments: { message: "direct" } }))).toBe("Echo: direct");
    await modern.close();
    // The bridge never opened for it: no session was initialized on the connector's behalf.
    await t.services.audit.flush();
    const audit = await t.api("GET", `/api/v1/audit?connector_id=${id}`);
    expect(audit.body.items.map((r: { method: string }) => r.method)).not.toContain("initialize");
  });
});

describe("parked calls: a 2025 server asks a 2026-07-28 client during a call", () => {
  /** The v2 client pinned to 2026-07-28, answering elicitation and sampling; it fulfils input_required by itself. */
  async function askingClient(url: string, token: string) {
    const asked: string[] = [];
    const client = new ModernClient({ name: "parked-test", version: "1.0.0" }, {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: { pin: MODERN } },
    } as never);
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(`elicitation: ${request.params.message}`);
      return { action: "accept", content: { color: "blue" } };
    });
    client.setRequestHandler("sampling/createMessage", async (request) => {
      asked.push(`sampling: ${JSON.stringify(request.params.messages[0]?.content)}`);
      return { role: "assistant", content: { type: "text", text: "sampled here" }, model: "test-model" };
    });
    await client.connect(new ModernTransport(new URL(url), { fetch: (input, init) => as(token)(new Request(input, init)) }));
    return { client, asked };
  }

  test("sampling: the client is asked through input_required, and the same upstream call completes", async () => {
    const id = await connectedConnector(t.api, recorderUrl);
    const { client, asked } = await askingClient(proxyUrl(id), t.admin.token);
    const before = sent.filter((m) => m.method === "tools/call").length;
    const result = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hello", maxTokens: 10 } });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain("hello");
    expect(JSON.stringify(result)).toContain("sampled here");
    // One upstream call, not one per round: the retry went on in the call the server was serving.
    expect(sent.filter((m) => m.method === "tools/call").length).toBe(before + 1);
    await client.close();
  });

  test("elicitation: the client's answer reaches the server's waiting request", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const { client, asked } = await askingClient(proxyUrl(id), t.admin.token);
    const result = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(asked).toHaveLength(1);
    expect(JSON.stringify(result)).toContain("blue");
    await client.close();
  });

  test("the input_required result, its requestState, and a retry that does not fit", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const url = proxyUrl(id);
    const capabilities = { sampling: {} };
    const call = { method: "tools/call", params: { name: "trigger-sampling-request", arguments: { prompt: "p", maxTokens: 5 } } };
    const first = await (await as(t.admin.token)(modernRequest(url, call, {}, MODERN, capabilities))).json();
    expect(first.result).toMatchObject({ resultType: "input_required" });
    const [key] = Object.keys(first.result.inputRequests);
    expect(first.result.inputRequests[key!]).toMatchObject({ method: "sampling/createMessage" });
    const state = first.result.requestState as string;
    expect(state.length).toBeGreaterThanOrEqual(22);
    // Another user's retry with that state is refused at the door; the same user with another credential (another
    // caller: another bridge) finds nothing waiting on it.
    const other = await t.user(`parked-${crypto.randomUUID().slice(0, 8)}`);
    const sampled = { role: "assistant", content: { type: "text", text: "from the retry" }, model: "m" };
    const retry = (token: string, params: Record<string, unknown>) =>
      as(token)(
        modernRequest(url, { id: 2, method: "tools/call", params: { ...call.params, ...params } }, {}, MODERN, capabilities),
      );
    expect((await retry(other.token, { requestState: state, inputResponses: { [key!]: sampled } })).status).toBe(404);
    const basic = `Basic ${btoa(`${t.admin.basic.username}:${t.admin.basic.password}`)}`;
    const byBasic = modernRequest(
      url,
      { id: 2, method: "tools/call", params: { ...call.params, requestState: state, inputResponses: { [key!]: sampled } } },
      { authorization: basic },
      MODERN,
      capabilities,
    );
    expect((await (await t.handle(byBasic)).json()).error).toMatchObject({ code: -32602 });
    // A retry that leaves the asked input out, and one with a state that names nothing.
    const missing = await (await retry(t.admin.token, { requestState: state, inputResponses: {} })).json();
    expect(missing.error).toMatchObject({ code: -32602 });
    const unknown = await (await retry(t.admin.token, { requestState: "no-such-state", inputResponses: {} })).json();
    expect(unknown.error).toMatchObject({ code: -32602 });
    // The right retry gets the call's result, and the state cannot be used twice.
    const done = await (await retry(t.admin.token, { requestState: state, inputResponses: { [key!]: sampled } })).json();
    expect(done.id).toBe(2);
    expect(done.result).toMatchObject({ resultType: "complete" });
    expect(JSON.stringify(done.result)).toContain("from the retry");
    const again = await (await retry(t.admin.token, { requestState: state, inputResponses: { [key!]: sampled } })).json();
    expect(again.error).toMatchObject({ code: -32602 });
  });

  test("a client that declared no sampling: the server's request is refused, the call still answers", async () => {
    const id = await connectedConnector(t.api, everything.url);
    const call = { method: "tools/call", params: { name: "trigger-sampling-request", arguments: { prompt: "p", maxTokens: 5 } } };
    const answer = await (await as(t.admin.token)(modernRequest(proxyUrl(id), call))).json();
    expect(answer.result ?? answer.error).toBeDefined();
    expect(answer.result?.resultType).not.toBe("input_required");
  });
});
