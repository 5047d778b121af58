import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, PUBLIC_URL, type TestApp } from "../support/app";
import { connectedConnector, mcpPost } from "../support/mcp";

// Hostile message bodies at every MCP URL that reads one: a connector's proxy URL, a virtual server's, and a connector's
// served to a 2026-07-28 client through the era bridge. The member is a real MCP server (the SDK's) behind a tap on
// loopback that records the bodies it is sent, so a test sees what reached the server, byte for byte.
const one = await startLabelledServer("one");
const received: string[] = [];
const tap = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = request.method === "POST" ? await request.text() : undefined;
    if (body !== undefined) received.push(body);
    const headers = new Headers(request.headers);
    headers.delete("host");
    return fetch(one.url, { method: request.method, headers, ...(body !== undefined && { body }) });
  },
});

let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let connector: string;
let virtualUrl: string;

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true });
  alice = await t.user("alice");
  connector = await connectedConnector(alice.api, `http://127.0.0.1:${tap.port}/mcp`);
  const created = await alice.api("POST", "/api/v1/virtual-servers", {
    body: { name: "V", members: [{ connector_id: connector, prefix: "one" }] },
  });
  virtualUrl = created.body.mcp_url;
});
afterAll(async () => {
  await t.close();
  await tap.stop(true);
  await one.stop();
});

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  t.fetch(mcpPost(url, alice.token, body, headers));

/** A 2025 session at `url`: its headers for the requests that follow. */
async function session(url: string) {
  const init = await post(
    url,
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "hostile", version: "1" } },
    }),
  );
  await init.text();
  return { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" };
}

const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
const callWith = (name: string, args: string, id = 1) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;
const modern = (name: string) => ({ "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name });
const modernCall = (name: string, args: string) =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${args},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`;

describe("a body nested deeper than any message needs", () => {
  test("at a connector's proxy URL: 400 with -32700 saying why, never a 500", async () => {
    const headers = await session(`${PUBLIC_URL}/api/v1/connectors/${connector}/mcp`);
    const res = await post(
      `${PUBLIC_URL}/api/v1/connectors/${connector}/mcp`,
      callWith("echo", `{"x":${deep(100_000)}}`),
      headers,
    );
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: -32700, message: expect.stringContaining("nests more than 100") });
  });

  test("at a virtual server's URL: 400 -32700, and the member is not taken for a failing one", async () => {
    const headers = await session(virtualUrl);
    const res = await post(virtualUrl, callWith("one__echo", `{"x":${deep(100_000)}}`), headers);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: -32700, message: expect.stringContaining("nests more than 100") });
    const next = await post(virtualUrl, callWith("one__echo", '{"message":"still here"}', 2), headers);
    expect(await next.text()).toContain("one: still here");
  });

  test("through the era bridge (a 2026-07-28 client of a 2025 server): 400 -32700", async () => {
    const url = `${PUBLIC_URL}/api/v1/connectors/${connector}/mcp`;
    const res = await post(url, modernCall("echo", `{"x":${deep(100_000)}}`), modern("echo"));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: -32700, message: expect.stringContaining("nests more than 100") });
  });
});

describe("a number JSON.parse would change", () => {
  const exact = "9007199254740993";

  test("reaches the server as the client wrote it, through a virtual server", async () => {
    const headers = await session(virtualUrl);
    received.length = 0;
    const res = await post(virtualUrl, callWith("one__echo", `{"message":"n","n":${exact}}`), headers);
    expect(await res.text()).toContain("one: n");
    expect(received.find((body) => body.includes('"tools/call"'))).toContain(`"n":${exact}`);
  });

  test("reaches the server as the client wrote it, through the era bridge", async () => {
    received.length = 0;
    const res = await post(
      `${PUBLIC_URL}/api/v1/connectors/${connector}/mcp`,
      modernCall("echo", `{"message":"n","n":${exact}}`),
      modern("echo"),
    );
    expect(await res.text()).toContain("one: n");
    expect(received.find((body) => body.includes('"tools/call"'))).toContain(`"n":${exact}`);
  });
});
