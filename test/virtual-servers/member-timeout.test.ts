import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { startLabelledServer } from "../peers/labelled-server";
import { lateGate } from "../peers/late-gate";
import { statefulMcp } from "../peers/stateful-mcp";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// A member slower than VIRTUAL__MEMBER_TIMEOUT_SECONDS (docs/interface.md §9.4): the listing still answers, within
// that bound, without it; a call to its tool names it and why.
let t: TestApp;
const fast = await startLabelledServer("fast");
const slow = await startLabelledServer("slow");
let delaying = false;

// In front of `slow`: while `delaying`, its tools/list answers come 3 s late.
const gate = lateGate(slow.url, "tools/list", { delayMs: 3_000, delays: () => delaying });

// A member that declares logging, in front of which its logging/setLevel answers come 3 s late.
const logging = statefulMcp(() => {
  const server = new McpServer({ name: "logging", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.registerTool("echo", { description: "Echo", inputSchema: {} }, async () => ({
    content: [{ type: "text", text: "logging: echo" }],
  }));
  return server;
});
const loggingGate = lateGate(logging.fetch, "logging/setLevel", { delayMs: 3_000 });

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true, env: { VIRTUAL__MEMBER_TIMEOUT_SECONDS: "1" } });
});
afterAll(async () => {
  await t.close();
  gate.stop();
  loggingGate.stop();
  await fast.stop();
  await slow.stop();
});

/** `user`'s virtual server of the fast member and the one at `otherUrl` (prefix `other`), and an SDK client in session. */
async function fastAnd(user: string, other: { url: string; prefix: string }) {
  const { api, token } = await t.user(user);
  const idFast = await connectedConnector(api, fast.url);
  const idOther = await connectedConnector(api, other.url);
  const created = await api("POST", "/api/v1/virtual-servers", {
    body: {
      name: `Fast and ${other.prefix}`,
      members: [
        { connector_id: idFast, prefix: "fast" },
        { connector_id: idOther, prefix: other.prefix },
      ],
    },
  });
  expect(created.status).toBe(201);
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${token}`);
    return t.fetch(request);
  };
  const mcp = new Client({ name: "timeout-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(created.body.mcp_url), { fetch: fetchFn }));
  return { mcp, idOther };
}

test("a slow member is left out within the bound (open), and a call to its tool says why", async () => {
  const { mcp, idOther: idSlow } = await fastAnd("alice", { url: gate.url, prefix: "slow" });
  delaying = true;
  const started = performance.now();
  const listed = await mcp.listTools();
  expect(performance.now() - started).toBeLessThan(2_500);
  expect(listed.tools.map((tool) => tool.name)).toEqual(["fast__echo", "fast__secret", "fast__slow"]);
  const call = await mcp.callTool({ name: "slow__echo", arguments: { message: "x" } }).catch((e: Error) => e);
  expect((call as { code?: number }).code).toBe(-32603);
  expect((call as Error).message).toContain(`Member "slow" (connector ${idSlow}) is unavailable`);
  expect((call as Error).message).toContain("did not answer within 1 s");
  await mcp.close();
});

test("a member slow to take the client's log level as its session opens is left out within the bound too", async () => {
  const { mcp } = await fastAnd("bob", { url: loggingGate.url, prefix: "logging" });
  // The level is told to each member as its session opens, before the session is used (member-session.ts).
  await mcp.setLoggingLevel("info");
  const started = performance.now();
  const listed = await mcp.listTools();
  // Before, the listing waited for the member's opening whole, the level's answer included (3 s here, up to the
  // SDK's 60 s default), whatever VIRTUAL__MEMBER_TIMEOUT_SECONDS said.
  expect(performance.now() - started).toBeLessThan(2_500);
  expect(listed.tools.map((tool) => tool.name)).toEqual(["fast__echo", "fast__secret", "fast__slow"]);
  await mcp.close();
});

test("a member slow to take a log level holds the client's logging/setLevel no longer than the bound", async () => {
  const { mcp } = await fastAnd("carol", { url: loggingGate.url, prefix: "logging" });
  // Both members' sessions open (no level to tell yet).
  expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("logging__echo");
  const started = performance.now();
  await mcp.setLoggingLevel("info");
  // Before, the client's request waited for the member's answer whole (3 s here, up to the SDK's 60 s default).
  expect(performance.now() - started).toBeLessThan(2_500);
  await mcp.close();
});
