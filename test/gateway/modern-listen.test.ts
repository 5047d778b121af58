import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { modernClient, modernRequest } from "../support/modern";
import { waitFor } from "../support/wait";

// MCP 2026-07-28 subscriptions/listen over a legacy server's one session (gateway/listen.ts).
const URL_ = "http://localhost/mcp";
const log = createLogger({ level: "error", write: () => {} });
const SUB = "io.modelcontextprotocol/subscriptionId";

type Streamed = { method?: string; params?: { _meta?: Record<string, unknown>; [k: string]: unknown } }[];

/** The messages of a listen stream as they come (its SSE `data:` lines, parsed); `cancel` closes the stream. */
function streamOf(response: Response): Streamed & { cancel(): Promise<void> } {
  const reader = response.body!.getReader();
  const messages = Object.assign([] as Streamed, { cancel: () => reader.cancel() });
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffer += decoder.decode(chunk.value, { stream: true });
      const events = buffer.split("\n\n");
      buffer = events.pop()!;
      for (const event of events)
        for (const line of event.split("\n")) if (line.startsWith("data: ")) messages.push(JSON.parse(line.slice(6)));
    }
  })().catch(() => undefined);
  return messages;
}

describe("with server-everything (stdio)", () => {
  let gateway: ReturnType<typeof createSharedGateway>;
  const toServer: JSONRPCMessage[] = [];
  beforeAll(async () => {
    const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
    const send = server.send.bind(server);
    server.send = (message) => (toServer.push(message), send(message));
    gateway = createSharedGateway({ server, log });
    await gateway.ready();
  });
  afterAll(() => gateway.close());
  const sentToServer = (method: string) => toServer.filter((m) => "method" in m && m.method === method);

  test("two listeners of one resource: one resources/subscribe to the process, resources/updated to both, one unsubscribe after the last closes", async () => {
    const uri = "demo://resource/static/document/architecture.md";
    const [a, b] = await Promise.all([modernClient(URL_, gateway.fetch), modernClient(URL_, gateway.fetch)]);
    const updates = { a: [] as string[], b: [] as string[] };
    a.client.setNotificationHandler("notifications/resources/updated", (n) => void updates.a.push(n.params.uri));
    b.client.setNotificationHandler("notifications/resources/updated", (n) => void updates.b.push(n.params.uri));
    const [subA, subB] = await Promise.all([
      a.client.listen({ resourceSubscriptions: [uri], toolsListChanged: true }),
      b.client.listen({ resourceSubscriptions: [uri] }),
    ]);
    expect(subA.honoredFilter).toEqual({ resourceSubscriptions: [uri], toolsListChanged: true });
    expect(sentToServer("resources/subscribe")).toHaveLength(1);
    // server-everything sends an update for each subscribed URI at once, then every 5 s.
    await a.client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
    await waitFor("both listeners' update", () => updates.a.length > 0 && updates.b.length > 0);
    expect(updates.a[0]).toBe(uri);
    expect(updates.b[0]).toBe(uri);
    await a.client.callTool({ name: "toggle-subscriber-updates", arguments: {} });

    await subA.close();
    await Bun.sleep(50);
    expect(sentToServer("resources/unsubscribe")).toHaveLength(0);
    await subB.close();
    await waitFor("the unsubscribe", () => sentToServer("resources/unsubscribe").length === 1);
    await waitFor("nothing open", () => gateway.pendingRequests() === 0);
    await Promise.all([a.close(), b.close()]);
  });

  test("the acknowledgement comes first, tagged with the listen request's id", async () => {
    const res = await gateway.fetch(
      modernRequest(URL_, {
        id: "listen-7",
        method: "subscriptions/listen",
        params: { notifications: { promptsListChanged: true } },
      }),
    );
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const messages = streamOf(res);
    await waitFor("the acknowledgement", () => messages.length > 0);
    expect(messages[0]).toEqual({
      jsonrpc: "2.0",
      method: "notifications/subscriptions/acknowledged",
      params: { notifications: { promptsListChanged: true }, _meta: { [SUB]: "listen-7" } },
    } as never);
    await messages.cancel();
    await waitFor("the listener to go", () => gateway.pendingRequests() === 0);
  });
});

test("list changes go to the listeners that asked for them, tagged each with its own subscription id; at shutdown each stream gets its empty result", async () => {
  // A stdio server that says what it is told to (list changes on demand), as a transport.
  const server: Transport & { emit(method: string): void } = {
    async start() {},
    async send(message) {
      if ("method" in message && "id" in message)
        queueMicrotask(() =>
          server.onmessage?.({
            jsonrpc: "2.0",
            id: message.id,
            result:
              message.method === "initialize"
                ? {
                    protocolVersion: "2025-11-25",
                    capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
                    serverInfo: { name: "fake", version: "1" },
                  }
                : {},
          }),
        );
    },
    async close() {},
    emit(method) {
      server.onmessage?.({ jsonrpc: "2.0", method });
    },
  };
  const gateway = createSharedGateway({ server, log });
  await gateway.ready();
  const listen = (id: number, notifications: Record<string, boolean>) =>
    gateway.fetch(modernRequest(URL_, { id, method: "subscriptions/listen", params: { notifications } })).then(streamOf);
  // Both use id 1 on their own streams: no collision.
  const tools = await listen(1, { toolsListChanged: true, resourcesListChanged: true });
  const prompts = await listen(1, { promptsListChanged: true });
  await waitFor("both acknowledgements", () => tools.length === 1 && prompts.length === 1);
  expect(tools[0]!.params!.notifications).toEqual({ toolsListChanged: true }); // the server has no resources
  server.emit("notifications/tools/list_changed");
  server.emit("notifications/prompts/list_changed");
  server.emit("notifications/message"); // a log line no request owns: dropped
  await waitFor("the changes", () => tools.length === 2 && prompts.length === 2);
  expect(tools[1]).toMatchObject({ method: "notifications/tools/list_changed", params: { _meta: { [SUB]: 1 } } });
  expect(prompts[1]).toMatchObject({ method: "notifications/prompts/list_changed", params: { _meta: { [SUB]: 1 } } });
  await gateway.close();
  await waitFor("the graceful ends", () => tools.length === 3 && prompts.length === 3);
  expect(tools[2]).toMatchObject({ id: 1, result: { _meta: { [SUB]: 1 } } });
});
