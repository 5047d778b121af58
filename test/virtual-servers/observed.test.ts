import { afterAll, beforeAll, describe, expect, test } from "bun:test";
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
