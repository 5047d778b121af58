import { afterAll, beforeAll, expect, test } from "bun:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";
import { PROTOCOL_VERSION_META_KEY as OURS } from "../../src/gateway/era";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { cancelMidway, expectBothEras, MODERN, modernRequest } from "../support/modern";

// The Kubernetes sidecar's gateway (one stdio process shared by every client) in front of server-everything, served to
// 2026-07-28 clients through its one legacy session; requests handed to its fetch, no sockets.
const URL_ = "http://localhost/mcp";
let gateway: ReturnType<typeof createSharedGateway>;
const toServer: JSONRPCMessage[] = [];

beforeAll(async () => {
  const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  const send = server.send.bind(server);
  server.send = (message) => {
    toServer.push(message);
    return send(message);
  };
  gateway = createSharedGateway({ server, log: createLogger({ level: "error", write: () => {} }) });
  await gateway.ready();
});
afterAll(() => gateway.close());

test("2026-07-28 and 2025 clients share the one process: list, call, progress, colliding ids; initialize went out once", async () => {
  await expectBothEras(URL_, gateway.fetch);
  expect(toServer.filter((m) => "method" in m && m.method === "initialize")).toHaveLength(1);
  // What went out carried no envelope keys.
  expect(JSON.stringify(toServer)).not.toContain("io.modelcontextprotocol/clientInfo");
});

test("server/discover is answered from the cached initialize result, in the 2026-07-28 shape", async () => {
  const before = toServer.length;
  const res = await gateway.fetch(modernRequest(URL_, { method: "server/discover" }));
  expect(res.status).toBe(200);
  const { result } = await res.json();
  expect(result).toMatchObject({
    supportedVersions: [MODERN],
    resultType: "complete",
    ttlMs: 0,
    cacheScope: "private",
    capabilities: { tools: {} },
    _meta: { "io.modelcontextprotocol/serverInfo": { name: expect.stringContaining("everything") } },
  });
  expect(result.capabilities.logging).toBeUndefined(); // no log line of the server can reach a 2026-07-28 client
  expect(toServer.length).toBe(before);
});

test("progress tokens are mapped both ways: the process sees the gateway's own, the client gets its own back", async () => {
  const res = await gateway.fetch(
    modernRequest(URL_, {
      id: 9,
      method: "tools/call",
      params: {
        name: "trigger-long-running-operation",
        arguments: { duration: 0.2, steps: 2 },
        _meta: { progressToken: "mine" },
      },
    }),
  );
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const events = (await res.text())
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
  expect(events.map((e) => e.params?.progressToken ?? e.id)).toEqual(["mine", "mine", 9]);
  const out = toServer.findLast((m) => "method" in m && m.method === "tools/call") as {
    params: { _meta: Record<string, unknown> };
  };
  expect(out.params._meta).toEqual({ progressToken: expect.stringMatching(/^p-\d+$/) });
});

test("header/body mismatches are 400 with -32020; an unknown version 400 with -32022 and the supported list; removed methods 404 -32601", async () => {
  const call = { method: "tools/call", params: { name: "echo", arguments: { message: "x" } } };
  for (const headers of [
    { "mcp-method": "tools/list" },
    { "mcp-name": "get-sum" },
    { "mcp-name": "=?base64?Z2V0LXN1bQ==?=" }, // "get-sum", encoded
    { "mcp-protocol-version": "2025-11-25" },
    { "mcp-method": undefined },
  ]) {
    const res = await gateway.fetch(modernRequest(URL_, call, headers));
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32020);
  }
  // The encoded form of the right name passes.
  const encoded = await gateway.fetch(modernRequest(URL_, call, { "mcp-name": "=?base64?ZWNobw==?=" }));
  expect((await encoded.json()).result.content[0].text).toBe("Echo: x");

  const unknown = await gateway.fetch(modernRequest(URL_, call, {}, "2099-01-01"));
  expect(unknown.status).toBe(400);
  expect((await unknown.json()).error).toMatchObject({ code: -32022, data: { supported: [MODERN], requested: "2099-01-01" } });

  for (const method of ["ping", "logging/setLevel", "resources/subscribe"]) {
    const removed = await gateway.fetch(modernRequest(URL_, { method, params: { level: "info", uri: "demo://x" } }));
    expect(removed.status).toBe(404);
    expect((await removed.json()).error.code).toBe(-32601);
  }
});

test("a 2026-07-28 client that goes away mid-call: the process gets notifications/cancelled for that call", async () => {
  await cancelMidway(URL_, gateway.fetch, () => toServer as { id?: unknown; method?: string; params?: unknown }[]);
});

test("the envelope key the service reads without the SDK's v2 package (era.ts) is the SDK's", () => {
  expect(OURS).toBe(PROTOCOL_VERSION_META_KEY);
});
