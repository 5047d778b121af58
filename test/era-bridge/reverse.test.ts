import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { startModernOnlyServer } from "../peers/modern-only-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, listingInSession, toolText } from "../support/mcp";
import { waitFor } from "../support/wait";

// A 2025 client (the MCP SDK v1 client: initialize, Mcp-Session-Id, the GET stream) in front of a server that speaks
// only 2026-07-28 (the MCP SDK v2's createMcpHandler with legacy: 'reject'), reached by the service over a real socket.
// Clients reach the service through `app.handle`.
let modern: ReturnType<typeof startModernOnlyServer>;
let t: TestApp;
let id: string;

beforeAll(async () => {
  modern = startModernOnlyServer();
  t = await createTestApp({ realNetwork: true });
  id = await connectedConnector(t.api, modern.url);
}, 30_000);
afterAll(async () => {
  await t.close();
  await modern.stop();
});

const proxyUrl = () => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
const as = (token: string) => (request: Request) => {
  const headers = new Headers(request.headers);
  headers.set("authorization", `Bearer ${token}`);
  return t.handle(new Request(request, { headers }));
};

/** The MCP SDK v1 client (2025 sessions), answering elicitation with `color`. */
async function legacyClient(token = t.admin.token, color = "blue", url = proxyUrl()) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: (input, init) => as(token)(new Request(input, init)),
  });
  const client = new Client({ name: "legacy-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: { color } };
  });
  await client.connect(transport);
  return { client, transport, asked };
}

describe("a 2026-07-28-only server", () => {
  test("connect records the one revision it speaks (its initialize refused, its server/discover answered)", async () => {
    const { body } = await t.api("GET", `/api/v1/connectors/${id}`);
    expect(body.state).toBe("connected");
    expect(body.protocol_versions).toEqual(["2026-07-28"]);
  });

  test("a 2025 client initializes, lists tools and calls one; the session is the proxy's", async () => {
    const { client, transport } = await legacyClient();
    expect(client.getServerVersion()?.name).toBe("modern-only");
    expect(client.getInstructions()).toBe("Only 2026-07-28 here.");
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toEqual(["echo", "slow", "log", "ask-color"]);
    expect(toolText(await client.callTool({ name: "echo", arguments: { message: "old" } }))).toBe("Echo: old");
    await client.close();
  });

  test("as a virtual server's member: listed under its prefix, called plainly, with progress and with a question", async () => {
    // The virtual server's member calls reach the server through its proxy URL in-process, as messages with no body
    // (http/read-already.ts), which the sessions kept for 2025 clients take as read too (found by review).
    const { body: server } = await t.api("POST", "/api/v1/virtual-servers", {
      body: { name: "Modern member", members: [{ connector_id: id, prefix: "m" }] },
    });
    const { client, asked } = await legacyClient(t.admin.token, "teal", `${t.publicUrl}/api/v1/virtual-servers/${server.id}/mcp`);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toEqual(["m__ask-color", "m__echo", "m__log", "m__slow"]);
    expect(toolText(await client.callTool({ name: "m__echo", arguments: { message: "through" } }))).toBe("Echo: through");
    const steps: number[] = [];
    const slow = await client.callTool({ name: "m__slow", arguments: { steps: 2, ms: 20 } }, undefined, {
      onprogress: (p) => void steps.push(p.progress),
    });
    expect([toolText(slow), steps]).toEqual(["Done: 2", [1, 2]]);
    expect(toolText(await client.callTool({ name: "m__ask-color", arguments: {} }))).toBe("Color: teal (asked-once)");
    expect(asked).toEqual(["Which color?"]);
    await client.close();
    await t.api("DELETE", `/api/v1/virtual-servers/${server.id}`);
  });

  test("progress of a long call reaches the 2025 client", async () => {
    const { client } = await legacyClient();
    const steps: number[] = [];
    const result = await client.callTool({ name: "slow", arguments: { steps: 3, ms: 30 } }, undefined, {
      onprogress: (p) => void steps.push(p.progress),
    });
    expect(toolText(result)).toBe("Done: 3");
    expect(steps).toEqual([1, 2, 3]);
    await client.close();
  });

  test("input_required: the server's elicitation is asked of the 2025 client, whose answer completes the call", async () => {
    const { client, asked } = await legacyClient(t.admin.token, "green");
    const result = await client.callTool({ name: "ask-color", arguments: {} });
    expect(asked).toEqual(["Which color?"]);
    // The retry carried the client's answer and the server's requestState, echoed.
    expect(toolText(result)).toBe("Color: green (asked-once)");
    await client.close();
  });

  test("two sessions stay apart: each its own id, answers and questions", async () => {
    const [a, b] = await Promise.all([legacyClient(t.admin.token, "red"), legacyClient(t.admin.token, "yellow")]);
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    const [ra, rb, ea, eb] = await Promise.all([
      a.client.callTool({ name: "ask-color", arguments: {} }),
      b.client.callTool({ name: "ask-color", arguments: {} }),
      a.client.callTool({ name: "echo", arguments: { message: "a" } }),
      b.client.callTool({ name: "echo", arguments: { message: "b" } }),
    ]);
    expect(toolText(ra)).toContain("red");
    expect(toolText(rb)).toContain("yellow");
    expect([toolText(ea), toolText(eb)]).toEqual(["Echo: a", "Echo: b"]);
    expect([a.asked.length, b.asked.length]).toEqual([1, 1]);
    await a.client.close();
    await b.client.close();
  });

  test("a session id the proxy does not know is 404; DELETE ends a session", async () => {
    const list = (session: string) => as(t.admin.token)(listingInSession(proxyUrl(), session));
    const unknown = await list(crypto.randomUUID());
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe(-32001);
    const { client, transport } = await legacyClient();
    const session = transport.sessionId!;
    expect((await list(session)).status).toBe(200);
    await transport.terminateSession();
    expect((await list(session)).status).toBe(404);
    await client.close();
  });

  test("another user is refused at the door (404 problem); another credential does not find the session", async () => {
    const { client, transport } = await legacyClient();
    const listIn = (session: string, authorization: string) => t.handle(listingInSession(proxyUrl(), session, authorization));
    const other = await t.user(`reverse-${crypto.randomUUID().slice(0, 8)}`);
    const refused = await listIn(transport.sessionId!, `Bearer ${other.token}`);
    expect(refused.status).toBe(404);
    expect(refused.headers.get("content-type")).toContain("application/problem+json");
    await expect(legacyClient(other.token)).rejects.toThrow();
    // The same user by another credential is another caller: the session is not theirs.
    const basic = `Basic ${btoa(`${t.admin.basic.username}:${t.admin.basic.password}`)}`;
    const elsewhere = await listIn(transport.sessionId!, basic);
    expect(elsewhere.status).toBe(404);
    expect((await elsewhere.json()).error.code).toBe(-32001);
    expect((await listIn(transport.sessionId!, `Bearer ${t.admin.token}`)).status).toBe(200);
    await client.close();
  });

  test("the client's version is agreed when the SDK knows it: 2025-06-18", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(proxyUrl()), {
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const body = request.method === "POST" ? await request.text() : undefined;
        const offered = body?.replace('"protocolVersion":"2025-11-25"', '"protocolVersion":"2025-06-18"');
        return as(t.admin.token)(new Request(request, { body: offered }));
      },
    });
    const client = new Client({ name: "older", version: "1.0.0" });
    await client.connect(transport);
    expect(transport.protocolVersion).toBe("2025-06-18");
    expect(toolText(await client.callTool({ name: "echo", arguments: { message: "06-18" } }))).toBe("Echo: 06-18");
    await client.close();
  });

  test("notifications/cancelled from the 2025 client cancels the server's call", async () => {
    const { client } = await legacyClient();
    const controller = new AbortController();
    let progressed = 0;
    const before = modern.cancelled();
    const call = client.callTool({ name: "slow", arguments: { steps: 50, ms: 100 } }, undefined, {
      signal: controller.signal,
      onprogress: () => void progressed++,
    });
    call.catch(() => undefined);
    await waitFor("progress", () => progressed > 0);
    controller.abort();
    await expect(call).rejects.toThrow();
    await waitFor("the server's call cancelled", () => modern.cancelled() > before);
    await client.close();
  });

  test("each request is audited as the caller's, as any client's", async () => {
    const { client } = await legacyClient();
    await client.callTool({ name: "echo", arguments: { message: "audited" } });
    await client.close();
    await t.services.audit.flush();
    const audit = await t.api("GET", `/api/v1/audit?connector_id=${id}&method=tools/call`);
    expect(audit.body.items.map((r: { name: string; outcome: string }) => `${r.name} ${r.outcome}`)).toContain("echo result");
  });

  test("logging/setLevel is kept by the session and sent in each request's envelope", async () => {
    const { client } = await legacyClient();
    const said: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void said.push(`${n.params.level}`));
    await client.callTool({ name: "log", arguments: {} });
    const unset = [...said];
    said.length = 0;
    await client.setLoggingLevel("error");
    await client.callTool({ name: "log", arguments: {} });
    expect(said).toEqual(["error"]);
    // 2026-07-28: a request whose envelope names no level gets no log messages (this SDK server's reading of it).
    expect(unset).toEqual([]);
    await client.close();
  });

  test("the GET stream carries list_changed from the server's subscriptions/listen", async () => {
    const { client } = await legacyClient();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void changed++);
    // The SDK client opens its GET stream after initialize; the proxy opens subscriptions/listen for it (a change
    // published before the server acknowledged it reaches no one: published again until one arrives).
    await waitFor("tools/list_changed on the GET stream", () => {
      modern.notify.toolsChanged();
      return changed > 0;
    });
    await client.close();
  });

  test("resources/subscribe maps onto the listen's resourceSubscriptions: updates reach the GET stream", async () => {
    const { client } = await legacyClient();
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
    expect((await client.readResource({ uri: "note://one" })).contents[0]).toMatchObject({ text: "one" });
    await client.subscribeResource({ uri: "note://one" });
    await waitFor("resources/updated on the GET stream", () => {
      modern.notify.resourceUpdated("note://one");
      return updated.length > 0;
    });
    expect(updated[0]).toBe("note://one");
    await client.close();
  });

  test("the tool policy applies to the 2025 session's requests (they go through the proxy)", async () => {
    const own = await connectedConnector(t.api, modern.url);
    expect((await t.api("PATCH", `/api/v1/connectors/${own}`, { body: { tool_policy: { deny: ["slow"] } } })).status).toBe(200);
    const transport = new StreamableHTTPClientTransport(new URL(`${t.publicUrl}/api/v1/connectors/${own}/mcp`), {
      fetch: (input, init) => as(t.admin.token)(new Request(input, init)),
    });
    const client = new Client({ name: "policy-test", version: "1.0.0" });
    await client.connect(transport);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["echo", "log", "ask-color"]);
    await client.close();
    // The owner's listing for editing the policy (a 2025 session of its own, unfiltered) still shows the denied tool.
    const listed = await t.api("GET", `/api/v1/connectors/${own}/tools`);
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((tool: { name: string }) => tool.name)).toContain("slow");
  });
});
