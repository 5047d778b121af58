import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { CALLER_HEADER } from "../../src/gateway/caller";
import { spawnGateway, startFifoSidecar, type FifoSidecar } from "../peers/fifo-sidecar";
import { mcpClient } from "../support/mcp";
import { MODERN, modernRequest } from "../support/modern";

// The Kubernetes sidecar (`connector-service gateway --fifo`, a subprocess, real sockets on 127.0.0.1) in front of
// server-everything over named pipes, serving 2025 sessions and 2026-07-28 requests with one process. A server's
// question during a 2026-07-28 call becomes a parked call when that call is the only request in flight on the process;
// during a 2025 session's call, or with several in flight, it is refused to the server.
const INPUT_TIMEOUT_SECONDS = 3;
let sidecar: FifoSidecar;
beforeAll(async () => {
  sidecar = await startFifoSidecar({ PROXY__INPUT_TIMEOUT_SECONDS: String(INPUT_TIMEOUT_SECONDS) });
});
afterAll(() => sidecar.stop());

const ELICIT = { method: "tools/call", params: { name: "trigger-elicitation-request", arguments: {} } };
const CAPABILITIES = { elicitation: { form: {} } };
/** A raw 2026-07-28 request of `caller` (the digest the proxy would send), declaring elicitation. */
const as = (caller: string, body: Parameters<typeof modernRequest>[1]) =>
  fetch(modernRequest(sidecar.url, body, { [CALLER_HEADER]: caller }, MODERN, CAPABILITIES)).then((r) => r.json());
/** The retry of a parked call (MCP 2026-07-28 multi-round-trip requests): its requestState and the answer to each input request. */
const retryOf = (first: { result: { requestState: string; inputRequests: Record<string, unknown> } }, id = 2) => ({
  id,
  method: ELICIT.method,
  params: {
    ...ELICIT.params,
    requestState: first.result.requestState,
    inputResponses: Object.fromEntries(
      Object.keys(first.result.inputRequests).map((key) => [key, { action: "accept", content: { color: "green" } }]),
    ),
  },
});
/** server-everything reports a refused request of its own as the tool's error, with the gateway's code and words. */
const refusedToServer = (result: unknown) => {
  expect(result).toMatchObject({ isError: true });
  expect(JSON.stringify(result)).toContain("-32601");
};

test("a 2026-07-28 client (SDK v2) is asked through parked calls: elicitation, then sampling, each call completing", async () => {
  const asked: string[] = [];
  const client = new ModernClient({ name: "sidecar-parked", version: "1.0.0" }, {
    capabilities: { elicitation: { form: {} }, sampling: {} },
    versionNegotiation: { mode: { pin: MODERN } },
  } as never);
  client.setRequestHandler("elicitation/create", async () => {
    asked.push("elicitation");
    return { action: "accept", content: { color: "blue" } };
  });
  client.setRequestHandler("sampling/createMessage", async (request) => {
    asked.push(`sampling: ${JSON.stringify(request.params.messages[0]?.content)}`);
    return { role: "assistant", content: { type: "text", text: "sampled in the sidecar" }, model: "test-model" };
  });
  await client.connect(new ModernTransport(new URL(sidecar.url)));
  try {
    expect(JSON.stringify(await client.callTool({ name: "trigger-elicitation-request", arguments: {} }))).toContain("blue");
    const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hello", maxTokens: 10 } });
    expect(JSON.stringify(sampled)).toContain("sampled in the sidecar");
    expect(asked).toEqual(["elicitation", expect.stringContaining("hello")]);
  } finally {
    await client.close();
  }
});

test("a parked call is its caller's: another caller's retry finds nothing (-32602), the caller's completes it", async () => {
  const first = await as("alice", { id: 1, ...ELICIT });
  expect(first.result).toMatchObject({ resultType: "input_required" });
  expect(Object.values(first.result.inputRequests)).toEqual([expect.objectContaining({ method: "elicitation/create" })]);
  expect((await as("mallory", retryOf(first))).error).toMatchObject({ code: -32602 });
  const done = await as("alice", retryOf(first));
  expect(done).toMatchObject({ id: 2, result: { resultType: "complete" } });
  expect(JSON.stringify(done.result.content)).toContain("green");
});

test("a parked call waits PROXY__INPUT_TIMEOUT_SECONDS for its retry, then is gone", async () => {
  const first = await as("alice", { id: 1, ...ELICIT });
  expect(first.result).toMatchObject({ resultType: "input_required" });
  await Bun.sleep(INPUT_TIMEOUT_SECONDS * 1000 + 1500);
  expect((await as("alice", retryOf(first))).error).toMatchObject({ code: -32602 });
});

describe("questions the sidecar cannot tie to one 2026-07-28 call are refused to the server", () => {
  test("during a 2025 session's call, the only one in flight: the session's call ends with the refusal, nothing is parked", async () => {
    const legacy = await mcpClient(sidecar.url, null);
    try {
      refusedToServer(await legacy.client.callTool({ name: "trigger-elicitation-request", arguments: {} }));
    } finally {
      await legacy.close();
    }
  });

  test("during a 2026-07-28 call while a 2025 session's call is in flight: the 2026-07-28 call ends with the refusal, not parked", async () => {
    const legacy = await mcpClient(sidecar.url, null);
    try {
      // The session's call is at the server once its first progress comes, and runs 4 s more.
      let progressed!: () => void;
      const inFlight = new Promise<void>((resolve) => (progressed = resolve));
      const long = legacy.client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 5, steps: 5 } },
        undefined,
        { onprogress: () => progressed() },
      );
      await inFlight;
      const asked = await as("alice", { id: 1, ...ELICIT });
      expect(asked.result.resultType).toBe("complete");
      refusedToServer(asked.result);
      expect(JSON.stringify(await long)).toContain("completed");
    } finally {
      await legacy.close();
    }
  });

  test("a parked call stays in flight: a 2025 session's call is answered meanwhile, its question refused; the parked call completes", async () => {
    const first = await as("alice", { id: 1, ...ELICIT });
    expect(first.result).toMatchObject({ resultType: "input_required" });
    const legacy = await mcpClient(sidecar.url, null);
    try {
      expect(JSON.stringify(await legacy.client.callTool({ name: "echo", arguments: { message: "meanwhile" } }))).toContain(
        "Echo: meanwhile",
      );
      refusedToServer(await legacy.client.callTool({ name: "trigger-elicitation-request", arguments: {} }));
    } finally {
      await legacy.close();
    }
    const done = await as("alice", retryOf(first));
    expect(done.result).toMatchObject({ resultType: "complete" });
    expect(JSON.stringify(done.result.content)).toContain("green");
  });
});

test("a bad PROXY__INPUT_TIMEOUT_SECONDS: the sidecar exits 2 saying what the setting must be", async () => {
  for (const value of ["soon", "0", "3601"]) {
    const gateway = spawnGateway(["--port", "0", "--fifo", "/nonexistent"], { PROXY__INPUT_TIMEOUT_SECONDS: value }, "pipe");
    expect(await gateway.exited).toBe(2);
    expect(await new Response(gateway.stderr as ReadableStream).text()).toContain(
      `PROXY__INPUT_TIMEOUT_SECONDS: must be a number of seconds from 1 to 3600 (got "${value}")`,
    );
  }
});
