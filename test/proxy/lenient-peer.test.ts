import { afterAll, beforeAll, expect, test } from "bun:test";
import { startLenientServer } from "../peers/lenient-server";
import { authHeader } from "../support/api";
import { connectedConnector, proxyUrl } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";

// Strict reading against a real server that reads what JSON.parse refuses: Python's json (a stdlib http.server,
// test/peers/lenient-server.py). Its tool "danger" is denied by the connector's policy and must never run.
let service: TestService;
let peer: Awaited<ReturnType<typeof startLenientServer>>;
let id: string;

beforeAll(async () => {
  [service, peer] = await Promise.all([startTestService(), startLenientServer()]);
  id = await connectedConnector(service.api, peer.url);
  expect((await service.api("PATCH", `/api/v1/connectors/${id}`, { body: { tool_policy: { deny: ["danger"] } } })).status).toBe(
    200,
  );
}, 30_000);
afterAll(async () => {
  await service?.stop();
  await peer?.stop();
});

const call = (name: string, x = "1") =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":{"x":${x}}}}`;
const send = (url: string, body: Uint8Array<ArrayBuffer> | string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });
const utf16 = (text: string) => new Uint8Array(Buffer.from(text, "utf16le"));

test("bodies Python reads and JSON.parse does not never run a denied tool through the proxy", async () => {
  const attacks = [
    call("danger", "NaN"),
    call("danger", "Infinity"),
    utf16(call("danger")),
    new Uint8Array([0xff, 0xfe, ...utf16(call("danger"))]),
  ];
  // The server does take them when they reach it: sent to it directly, each runs the tool.
  for (const body of attacks) expect((await send(peer.url, body)).status).toBe(200);
  expect(await peer.calls()).toEqual(["danger", "danger", "danger", "danger"]);

  const asAdmin = { authorization: authHeader(ADMIN) };
  for (const body of attacks) {
    const res = await send(proxyUrl(service, id), body, asAdmin);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32700);
  }
  // A plain call of an allowed tool still reaches it; the denied one, however written, never did again.
  expect((await send(proxyUrl(service, id), call("alpha"), asAdmin)).status).toBe(200);
  expect(await peer.calls()).toEqual(["danger", "danger", "danger", "danger", "alpha"]);
});
