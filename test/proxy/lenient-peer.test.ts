import { afterAll, beforeAll, expect, test } from "bun:test";
import { startLenientServer } from "../peers/lenient-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// Strict reading against a real server that reads what JSON.parse refuses: Python's json (a stdlib http.server,
// test/peers/lenient-server.py). Its tool "danger" is denied by the connector's policy and must never run. The service
// reaches the server over a real socket; the client reaches the service through `app.handle`.
let t: TestApp;
let peer: Awaited<ReturnType<typeof startLenientServer>>;
let id: string;

beforeAll(async () => {
  [t, peer] = await Promise.all([createTestApp({ realNetwork: true }), startLenientServer()]);
  id = await connectedConnector(t.api, peer.url);
  expect((await t.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: { deny: ["danger"] } } })).status).toBe(200);
}, 30_000);
afterAll(async () => {
  await t?.close();
  await peer?.stop();
});

const call = (name: string, x = "1") =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":{"x":${x}}}}`;
const post = (body: Uint8Array<ArrayBuffer> | string, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
  body,
});
/** Straight to the server, over its socket. */
const direct = (body: Uint8Array<ArrayBuffer> | string) => fetch(peer.url, post(body));
/** Through the proxy, as the administrator. */
const proxied = (body: Uint8Array<ArrayBuffer> | string) =>
  t.handle(new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, post(body, { authorization: `Bearer ${t.admin.token}` })));
const utf16 = (text: string) => new Uint8Array(Buffer.from(text, "utf16le"));

test("bodies Python reads and JSON.parse does not never run a denied tool through the proxy", async () => {
  const attacks = [
    call("danger", "NaN"),
    call("danger", "Infinity"),
    utf16(call("danger")),
    new Uint8Array([0xff, 0xfe, ...utf16(call("danger"))]),
  ];
  // The server does take them when they reach it: sent to it directly, each runs the tool.
  for (const body of attacks) expect((await direct(body)).status).toBe(200);
  expect(await peer.calls()).toEqual(["danger", "danger", "danger", "danger"]);

  for (const body of attacks) {
    const res = await proxied(body);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32700);
  }
  // A plain call of an allowed tool still reaches it; the denied one, however written, never did again.
  expect((await proxied(call("alpha"))).status).toBe(200);
  expect(await peer.calls()).toEqual(["danger", "danger", "danger", "danger", "alpha"]);
});
