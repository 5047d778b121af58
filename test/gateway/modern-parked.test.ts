import { afterAll, beforeAll, expect, test } from "bun:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { CALLER_HEADER } from "../../src/gateway/caller";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { MODERN, modernRequest } from "../support/modern";
import { waitFor } from "../support/wait";

// The local gateway's process for 2026-07-28 clients (gateway.ts: one stdio process shared by them, parking calls whose
// server asks for input) in front of server-everything; requests handed to its fetch, no sockets. A stdio server's
// request names no call: it is taken for the one client call in flight, and refused when there are several.
const URL_ = "http://localhost/mcp";
let gateway: ReturnType<typeof createSharedGateway>;
/** What the server was answered, by the id of its own request. */
const answeredServer: JSONRPCMessage[] = [];

beforeAll(async () => {
  const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  const send = server.send.bind(server);
  server.send = (message) => {
    if (!("method" in message)) answeredServer.push(message);
    return send(message);
  };
  gateway = createSharedGateway({
    server,
    log: createLogger({ level: "error", write: () => {} }),
    offer: { elicitation: {}, sampling: {} },
    parkCalls: { timeoutMs: 30_000, soleCall: true },
  });
  await gateway.ready();
});
afterAll(() => gateway.close());

const ELICIT = { method: "tools/call", params: { name: "trigger-elicitation-request", arguments: {} } };
const CAPABILITIES = { elicitation: { form: {} } };
const as = (caller: string | undefined, body: Parameters<typeof modernRequest>[1]) =>
  gateway.fetch(modernRequest(URL_, body, caller === undefined ? {} : { [CALLER_HEADER]: caller }, MODERN, CAPABILITIES));

test("the one call in flight is parked: input_required, the asking caller's retry completes it, another caller's finds nothing", async () => {
  const first = await (await as("alice", { id: 1, ...ELICIT })).json();
  expect(first.result).toMatchObject({ resultType: "input_required" });
  const [key] = Object.keys(first.result.inputRequests);
  expect(first.result.inputRequests[key!]).toMatchObject({ method: "elicitation/create" });
  const retry = (caller: string | undefined) =>
    as(caller, {
      id: 2,
      method: ELICIT.method,
      params: {
        ...ELICIT.params,
        requestState: first.result.requestState,
        inputResponses: { [key!]: { action: "accept", content: { color: "green" } } },
      },
    });
  // Another caller, and a request naming none, get what a state that names nothing gets.
  expect((await (await retry("mallory")).json()).error).toMatchObject({ code: -32602 });
  expect((await (await retry(undefined)).json()).error).toMatchObject({ code: -32602 });
  const done = await (await retry("alice")).json();
  expect(done.id).toBe(2);
  expect(done.result).toMatchObject({ resultType: "complete" });
  expect(JSON.stringify(done.result.content)).toContain("green");
});

test("with two calls in flight the server's request cannot be told apart: refused to the server, no client is asked", async () => {
  const long = as("bob", {
    id: 1,
    method: "tools/call",
    params: { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 1 } },
  });
  // The long call is in flight before the second starts (the server got it).
  await Bun.sleep(200);
  const before = answeredServer.length;
  const asked = await (await as("alice", { id: 2, ...ELICIT })).json();
  expect(asked.result?.resultType).not.toBe("input_required");
  expect(answeredServer.slice(before)).toContainEqual(
    expect.objectContaining({ error: expect.objectContaining({ code: -32601 }) }),
  );
  expect((await (await long).json()).result).toMatchObject({ resultType: "complete" });
});

test("a client's request whose id is the gateway's own still counts as in flight: a question during it is refused, not parked", async () => {
  const long = as("bob", {
    id: "gateway-initialize",
    method: "tools/call",
    params: { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 1 } },
  });
  await waitFor("the long call to be in flight", () => gateway.pendingRequests() === 1, 5_000);
  const before = answeredServer.length;
  const asked = await (await as("alice", { id: 2, ...ELICIT })).json();
  expect(asked.result?.resultType).not.toBe("input_required");
  expect(gateway.parkedCalls()).toBe(0);
  expect(answeredServer.slice(before)).toContainEqual(
    expect.objectContaining({ error: expect.objectContaining({ code: -32601 }) }),
  );
  expect((await (await long).json()).result).toMatchObject({ resultType: "complete" });
});
