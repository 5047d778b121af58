import { describe, expect, test } from "bun:test";
import { classifyInboundRequest } from "@modelcontextprotocol/server";
import { createClassifier } from "../../src/gateway/classify-memo";

const V = "io.modelcontextprotocol/protocolVersion";
const CAPS = "io.modelcontextprotocol/clientCapabilities";
const INFO = "io.modelcontextprotocol/clientInfo";
const LEVEL = "io.modelcontextprotocol/logLevel";
const envelope = { [V]: "2026-07-28", [CAPS]: {}, [INFO]: { name: "c", version: "1" } };
const call = (meta: Record<string, unknown> = envelope, extra: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name: "echo", arguments: { message: "hi" }, _meta: meta },
  ...extra,
});
const headers = { protocolVersionHeader: "2026-07-28", mcpMethodHeader: "tools/call", mcpNameHeader: "echo" };

/** Bodies and headers whose outcome the kept classifier must give exactly as the SDK does, first time and again. */
const cases: Array<[string, { body: unknown; protocolVersionHeader?: string; mcpMethodHeader?: string }]> = [
  ["a well-formed 2026-07-28 call", { body: call(), ...headers }],
  [
    "the same call with a progress token and trace context",
    { body: call({ ...envelope, progressToken: 7, traceparent: "00-x" }), ...headers },
  ],
  ["a string id and a log level", { body: call({ ...envelope, [LEVEL]: "debug" }, { id: "a" }), ...headers }],
  ["an invalid log level", { body: call({ ...envelope, [LEVEL]: "loud" }), ...headers }],
  ["the capabilities key missing", { body: call({ [V]: "2026-07-28" }), ...headers }],
  ["capabilities that are not an object", { body: call({ ...envelope, [CAPS]: 3 }), ...headers }],
  ["client info without a version", { body: call({ ...envelope, [INFO]: { name: "c" } }), ...headers }],
  ["a version header that disagrees", { body: call(), ...headers, protocolVersionHeader: "2026-08-01" }],
  ["a method header that disagrees", { body: call(), ...headers, mcpMethodHeader: "tools/list" }],
  ["no headers at all", { body: call() }],
  [
    "an unknown revision in the body",
    { body: call({ ...envelope, [V]: "2099-01-01" }), ...headers, protocolVersionHeader: "2099-01-01" },
  ],
  ["a version that is not a string", { body: call({ ...envelope, [V]: 5 }), ...headers }],
  ["a progress token that is a fraction", { body: call({ ...envelope, progressToken: 1.5 }), ...headers }],
  ["an id that is a fraction", { body: call(envelope, { id: 1.5 }), ...headers }],
  ["an id that is null", { body: call(envelope, { id: null }), ...headers }],
  ["an id past 2^53", { body: call(envelope, { id: 9007199254740994 }), ...headers }],
  ["a progress token past 2^53", { body: call({ ...envelope, progressToken: 9007199254740994 }), ...headers }],
  ["a key JSON-RPC does not have", { body: call(envelope, { extra: true }), ...headers }],
  ["jsonrpc 1.0", { body: call(envelope, { jsonrpc: "1.0" }), ...headers }],
  ["params that are an array", { body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: [] }, ...headers }],
  ["a related task without its id", { body: call({ ...envelope, "io.modelcontextprotocol/related-task": {} }), ...headers }],
  [
    "a modern header on a 2025 request",
    { body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, ...headers, mcpMethodHeader: "tools/list" },
  ],
  ["a 2025 request", { body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} } }],
  [
    "initialize with a modern header",
    { body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25" } }, ...headers },
  ],
  ["a notification", { body: { jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: envelope } }, ...headers }],
  ["a response", { body: { jsonrpc: "2.0", id: 1, result: {} }, ...headers }],
  ["a batch", { body: [call()], ...headers }],
  ["not JSON-RPC", { body: "hello", ...headers }],
];

describe("the kept era classification (classify-memo.ts)", () => {
  test("gives every outcome the SDK gives, the first time and from what it kept", () => {
    const kept = createClassifier();
    for (let round = 0; round < 2; round++)
      for (const [name, fields] of cases) {
        const sdk = classifyInboundRequest({ httpMethod: "POST", ...fields });
        expect({ name, route: kept(fields) }).toEqual({ name, route: sdk });
      }
  });

  test("asks the SDK once per request shape, and a modern route carries the request as it came", () => {
    let asked = 0;
    const kept = createClassifier((fields) => (asked++, classifyInboundRequest(fields)));
    const first = call({ ...envelope, progressToken: 1 });
    const second = { ...call({ ...envelope, progressToken: 2 }), id: 2 };
    expect(kept({ body: first, ...headers })).toMatchObject({ kind: "modern", message: first });
    expect(kept({ body: second, ...headers })).toMatchObject({ kind: "modern", message: second });
    expect(asked).toBe(1);
    // Another envelope, another method: asked again, never answered from the other's outcome.
    expect(kept({ body: call({ ...envelope, [LEVEL]: "loud" }), ...headers })).toMatchObject({ kind: "reject" });
    expect(asked).toBe(2);
  });

  test("keeps a bounded number of outcomes, and none for a huge envelope", () => {
    let asked = 0;
    const kept = createClassifier((fields) => (asked++, classifyInboundRequest(fields)));
    const huge = call({ ...envelope, [CAPS]: { experimental: { blob: { text: "x".repeat(10_000) } } } });
    kept({ body: huge, ...headers });
    kept({ body: huge, ...headers });
    expect(asked).toBe(2);
    for (let i = 0; i < 300; i++) kept({ body: call({ ...envelope, [INFO]: { name: `c${i}`, version: "1" } }), ...headers });
    asked = 0;
    // The oldest were let go (at most 256 kept): the first client's shape is asked again.
    kept({ body: call({ ...envelope, [INFO]: { name: "c0", version: "1" } }), ...headers });
    expect(asked).toBe(1);
  });
});
