import { afterEach, describe, expect, test } from "bun:test";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createGateway, type Gateway } from "../../src/gateway/gateway";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";

// How the gateways answer a POST on the wire (src/gateway/json-answers.ts), with the real server-everything over
// stdio — the per-session gateway (the local driver's) and the shared one (the Kubernetes sidecar's): as JSON when no
// request in it asks for progress, as an event stream when one does; a request still waiting when its session ends is
// answered with an error rather than left hanging.

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});

const headers = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
};

const kinds = {
  "per-session gateway": {
    create: () =>
      createGateway({
        stdio: { command: "node", args: [EVERYTHING, "stdio"], env: getDefaultEnvironment() },
        log: createLogger({ level: "error" }),
      }),
    ended: "The session ended before the stdio server answered",
  },
  "shared gateway": {
    create: () =>
      createSharedGateway({
        server: new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" }),
        log: createLogger({ level: "error" }),
      }),
    ended: "The session ended before the MCP server answered",
  },
};

async function open(create: () => Gateway) {
  const g = create();
  gateways.push(g);
  const post = (body: unknown, sessionId?: string) =>
    g.fetch(
      new Request("http://gateway/mcp", {
        method: "POST",
        headers: { ...headers, ...(sessionId && { "mcp-session-id": sessionId }) },
        body: JSON.stringify(body),
      }),
    );
  const init = await post({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  });
  expect(init.status).toBe(200);
  const id = init.headers.get("mcp-session-id")!;
  await init.text();
  expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, id)).status).toBe(202);
  return { g, id, post: (body: unknown) => post(body, id) };
}

const call = (id: number, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(meta && { _meta: meta }) },
});

for (const [name, kind] of Object.entries(kinds)) {
  describe(name, () => {
    test("a call that asks for no progress is answered as one JSON body naming its session", async () => {
      const { id, post } = await open(kind.create);
      const res = await post(call(1, "echo", { message: "json" }));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/json");
      expect(res.headers.get("mcp-session-id")).toBe(id);
      expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "Echo: json" }] } });
      // A batch of requests is one JSON array of their answers.
      const batch = await post([call(2, "echo", { message: "a" }), call(3, "echo", { message: "b" })]);
      const answers = (await batch.json()) as { id: number; result: { content: { text: string }[] } }[];
      expect(answers.map((a) => [a.id, a.result.content[0]!.text]).sort()).toEqual([
        [2, "Echo: a"],
        [3, "Echo: b"],
      ]);
    });

    test("a call with a progressToken is answered as an event stream carrying its progress, then its result", async () => {
      const { post } = await open(kind.create);
      const res = await post(call(1, "trigger-long-running-operation", { duration: 0.2, steps: 2 }, { progressToken: "p1" }));
      expect(res.headers.get("content-type")).toStartWith("text/event-stream");
      const text = await res.text();
      const messages = text
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => JSON.parse(l.slice(6)));
      expect(messages.filter((m) => m.method === "notifications/progress").map((m) => m.params.progressToken)).toEqual([
        "p1",
        "p1",
      ]);
      expect(messages.at(-1)).toMatchObject({ id: 1, result: { content: [{ type: "text" }] } });
    });

    test("a JSON call still waiting when its session is deleted gets an error answer at once", async () => {
      const { g, id, post } = await open(kind.create);
      const waiting = post(call(1, "trigger-long-running-operation", { duration: 30, steps: 1 }));
      await Bun.sleep(100); // the server has the call
      const started = performance.now();
      const deleted = g.fetch(
        new Request("http://gateway/mcp", { method: "DELETE", headers: { ...headers, "mcp-session-id": id } }),
      );
      const res = await waiting;
      expect(res.headers.get("content-type")).toStartWith("application/json");
      expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32000, message: kind.ended } });
      expect(performance.now() - started).toBeLessThan(1_000); // not after the 30 s the call would have taken
      expect((await deleted).status).toBe(200);
    });
  });
}

test("a body that is not JSON is a JSON-RPC parse error; one over 4 MiB is a 413, declared or not; a notification alone is a 202", async () => {
  const { g, id, post } = await open(kinds["per-session gateway"].create);
  const bad = await g.fetch(
    new Request("http://gateway/mcp", { method: "POST", headers: { ...headers, "mcp-session-id": id }, body: "{not json" }),
  );
  expect(bad.status).toBe(400);
  expect((await bad.json()).error.code).toBe(-32700);
  const huge = JSON.stringify(call(1, "echo", { message: "x".repeat(4 * 1024 * 1024) }));
  const streamed = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(huge)), c.close()) });
  for (const body of [huge, streamed]) {
    const res = await g.fetch(
      new Request("http://gateway/mcp", {
        method: "POST",
        headers: { ...headers, "mcp-session-id": id, ...(typeof body === "string" && { "content-length": String(huge.length) }) },
        body,
      }),
    );
    expect(res.status).toBe(413);
    expect((await res.json()).error.message).toContain("must not exceed 4194304 bytes");
  }
  expect((await post({ jsonrpc: "2.0", method: "notifications/roots/list_changed" })).status).toBe(202);
});

test("shared gateway: a JSON call still waiting when the server goes away gets an error answer", async () => {
  const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  const { post } = await open(() => createSharedGateway({ server, log: createLogger({ level: "error" }) }));
  const waiting = post(call(1, "trigger-long-running-operation", { duration: 30, steps: 1 }));
  await Bun.sleep(100); // the server has the call
  process.kill(server.pid!, "SIGKILL");
  const res = await waiting;
  expect(res.headers.get("content-type")).toStartWith("application/json");
  expect(await res.json()).toEqual({
    jsonrpc: "2.0",
    id: 1,
    error: { code: -32000, message: "The MCP server went away before it answered" },
  });
});
