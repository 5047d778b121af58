import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// A member slower than VIRTUAL__MEMBER_TIMEOUT_SECONDS (docs/interface.md §9.4): the listing still answers, within
// that bound, without it; a call to its tool names it and why.
let t: TestApp;
const fast = await startLabelledServer("fast");
const slow = await startLabelledServer("slow");
let delaying = false;
// In front of `slow`: while `delaying`, its tools/list answers come 3 s late.
const gate = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 30,
  async fetch(request) {
    const body = request.method === "POST" ? await request.text() : undefined;
    if (delaying && body?.includes('"tools/list"')) await Bun.sleep(3_000);
    return fetch(new Request(slow.url, { method: request.method, headers: request.headers, body }));
  },
});

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true, env: { VIRTUAL__MEMBER_TIMEOUT_SECONDS: "1" } });
});
afterAll(async () => {
  await t.close();
  gate.stop(true);
  await fast.stop();
  await slow.stop();
});

test("a slow member is left out within the bound (open), and a call to its tool says why", async () => {
  const alice = await t.user("alice");
  const idFast = await connectedConnector(alice.api, fast.url);
  const idSlow = await connectedConnector(alice.api, `http://127.0.0.1:${gate.port}/mcp`);
  const created = await alice.api("POST", "/api/v1/virtual-servers", {
    body: {
      name: "Mixed",
      members: [
        { connector_id: idFast, prefix: "fast" },
        { connector_id: idSlow, prefix: "slow" },
      ],
    },
  });
  expect(created.status).toBe(201);
  delaying = true;
  const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${alice.token}`);
    return t.fetch(request);
  };
  const mcp = new Client({ name: "timeout-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(created.body.mcp_url), { fetch: fetchFn }));
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
