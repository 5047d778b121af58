import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createRegistry } from "../../src/metrics/registry";
import { createVirtualServerMetrics, MAX_VIRTUAL_SERVER_SERIES } from "../../src/virtual-servers/metrics";
import { scrape } from "../metrics/scrape";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient, toolText } from "../support/mcp";

// What a virtual server's member calls leave behind: audit records naming the virtual server (its member is the
// record's connector), and metrics per virtual server.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const one = await startLabelledServer("one");
const two = await startLabelledServer("two");
let idOne: string;
let idTwo: string;

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true, env: { VIRTUAL__MEMBER_TIMEOUT_SECONDS: "2" } });
  alice = await t.user("alice");
  idOne = await connectedConnector(alice.api, one.url);
  idTwo = await connectedConnector(alice.api, two.url);
});
afterAll(async () => {
  await t.close();
  await one.stop();
  await two.stop();
});

async function virtualServer(name: string) {
  const members = [
    { connector_id: idOne, prefix: "one" },
    { connector_id: idTwo, prefix: "two" },
  ];
  const res = await alice.api("POST", "/api/v1/virtual-servers", { body: { name, members } });
  expect(res.status).toBe(201);
  return res.body as { id: string; mcp_url: string };
}

type Record = { connector_id: string; virtual_server_id: string | null; method: string; name: string | null; outcome: string };
const audit = async (query: string) => {
  const res = await alice.api("GET", `/api/v1/audit?${query}`);
  expect(res.status).toBe(200);
  return res.body.items as Record[];
};

describe("audit", () => {
  test("a call through a virtual server is recorded with its id and the member; the filter finds exactly those", async () => {
    const server = await virtualServer("Audited");
    const other = await virtualServer("Other");
    const { client } = await mcpClient(server.mcp_url, { token: alice.token }, t.fetch);
    expect(toolText(await client.callTool({ name: "two__echo", arguments: { message: "hi" } }))).toBe("two: hi");
    await client.close();
    const elsewhere = await mcpClient(other.mcp_url, { token: alice.token }, t.fetch);
    await elsewhere.client.callTool({ name: "one__echo", arguments: { message: "x" } });
    await elsewhere.client.close();
    // The same member called at its own proxy URL: no virtual server.
    const direct = await mcpClient(`${t.publicUrl}/api/v1/connectors/${idTwo}/mcp`, { token: alice.token }, t.fetch);
    await direct.client.callTool({ name: "echo", arguments: { message: "direct" } });
    await direct.client.close();

    const through = await audit(`virtual_server_id=${server.id}&method=tools/call`);
    expect(through).toHaveLength(1);
    // The member got its own name; the record says which member and which virtual server.
    expect(through[0]).toMatchObject({ connector_id: idTwo, virtual_server_id: server.id, name: "echo", outcome: "result" });
    // Every record of the virtual server's session names it: the members' initialize and listing too.
    const all = await audit(`virtual_server_id=${server.id}&limit=100`);
    expect(all.map((r) => r.method)).toContain("initialize");
    expect(all.map((r) => r.method)).toContain("tools/list");
    expect(new Set(all.map((r) => r.virtual_server_id))).toEqual(new Set([server.id]));
    expect((await audit(`virtual_server_id=${other.id}&method=tools/call`)).map((r) => r.connector_id)).toEqual([idOne]);

    const byMember = await audit(`connector_id=${idTwo}&method=tools/call`);
    expect(byMember.map((r) => r.virtual_server_id).sort()).toEqual([null, server.id].sort());
  });
});

describe("metrics", () => {
  const series = async (serverId: string) =>
    Object.fromEntries([...(await scrape(t)).samples].filter(([name]) => name.includes(`virtual_server="${serverId}"`)));

  test("each member message counts under its virtual server, method and outcome, with its duration", async () => {
    const server = await virtualServer("Counted");
    expect(await series(server.id)).toEqual({});
    const { client } = await mcpClient(server.mcp_url, { token: alice.token }, t.fetch);
    await client.callTool({ name: "one__echo", arguments: { message: "a" } });
    await client.callTool({ name: "two__echo", arguments: { message: "b" } });
    // The member's own JSON-RPC error (a prompt argument missing): outcome error.
    expect(await client.getPrompt({ name: "two__hello", arguments: {} }).catch((e: Error) => e)).toBeInstanceOf(Error);
    // A name not admitted never reaches a member: nothing counted for it.
    await client.callTool({ name: "two__nothing", arguments: {} }).catch(() => undefined);
    await client.close();

    const counted = await series(server.id);
    const requests = (method: string, outcome: string) =>
      counted[`virtual_server_member_requests_total{virtual_server="${server.id}",method="${method}",outcome="${outcome}"}`];
    expect(requests("tools/call", "result")).toBe(2);
    expect(requests("prompts/get", "error")).toBe(1);
    // One session per member: initialize and its notification each twice; the tools listing once per member.
    expect(requests("initialize", "result")).toBe(2);
    expect(requests("tools/list", "result")).toBe(2);
    const total = Object.entries(counted)
      .filter(([name]) => name.startsWith("virtual_server_member_requests_total"))
      .reduce((sum, [, value]) => sum + value, 0);
    expect(counted[`virtual_server_member_request_duration_seconds_count{virtual_server="${server.id}"}`]).toBe(total);
    expect(counted[`virtual_server_member_request_duration_seconds_bucket{virtual_server="${server.id}",le="+Inf"}`]).toBe(total);
    expect(counted[`virtual_server_member_request_duration_seconds_sum{virtual_server="${server.id}"}`]).toBeGreaterThan(0);
  });

  test("past MAX_VIRTUAL_SERVER_SERIES virtual servers, the rest count together as other; methods outside the set too", async () => {
    const registry = createRegistry();
    const metrics = createVirtualServerMetrics(registry);
    for (let i = 0; i <= MAX_VIRTUAL_SERVER_SERIES; i++) metrics.observe(`vs-${i}`, "tools/call", "result", 0.01);
    metrics.observe("vs-0", "made/up", "error", 0.01);
    metrics.observe("vs-0", null, "http", 0.01);
    const text = await registry.render();
    expect(text).toContain('virtual_server_member_requests_total{virtual_server="vs-0",method="tools/call",outcome="result"} 1');
    expect(text).toContain('virtual_server_member_requests_total{virtual_server="vs-0",method="other",outcome="error"} 1');
    expect(text).toContain('virtual_server_member_requests_total{virtual_server="vs-0",method="other",outcome="http"} 1');
    expect(text).not.toContain(`virtual_server="vs-${MAX_VIRTUAL_SERVER_SERIES}"`);
    expect(text).toContain('virtual_server_member_requests_total{virtual_server="other",method="tools/call",outcome="result"} 1');
    expect(text).toContain('virtual_server_member_request_duration_seconds_count{virtual_server="vs-0"} 3');
  });
});
