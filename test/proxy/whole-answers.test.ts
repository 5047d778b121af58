import { afterAll, beforeAll, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { waitFor } from "../support/wait";

// A JSON answer of declared length is read whole in one read, before it is ever a stream (forward.ts, TakeWhole), for
// the audit trail: relayed byte for byte under the relay's header rules, its outcome recorded, its bytes held against
// the caller's budget only while they are read — and an answer broken off mid-body is the server's failure (502), not
// the service's (500). A client that goes away before the server answers still ends the server's request.
const SCRIPTED = "https://whole.example/mcp";
const scripted = scriptedServer();
/** How the next POST is answered; the scripted MCP server otherwise (connect). */
let answer: ((request: Request) => Response | Promise<Response>) | undefined;
/** The signal of the last POST that reached the server. */
let reached: AbortSignal | undefined;
let t: TestApp;
let id: string;

beforeAll(async () => {
  t = await createTestApp({ env: { PROXY__HELD_BYTES_PER_USER: "4096", PROXY__MAX_STREAMS_PER_USER: "1" } });
  t.network.serve(SCRIPTED, (request) => {
    if (request.method !== "POST" || !answer) return scripted.handler(request);
    reached = request.signal;
    return answer(request);
  });
  id = await connectedConnector(t.api, SCRIPTED);
});
afterAll(() => {
  scripted.release();
  return t.close();
});

const post = (init: { signal?: AbortSignal } = {}) =>
  t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      signal: init.signal,
      headers: {
        authorization: `Bearer ${t.admin.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "lookup", arguments: {} } }),
    }),
  );

/** A JSON answer that declares its length, as a server over HTTP/1.1 does. */
const declared = (text: string, headers: Record<string, string> = {}) =>
  new Response(text, {
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers },
  });

const lastRecord = async () => (await t.api("GET", `/api/v1/audit?connector_id=${id}&limit=1`)).body.items[0];

test("relayed byte for byte with the relay's headers only, its outcome recorded: a result, then an error", async () => {
  const result = '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\\"error\\" is a word"}]}}';
  answer = () => declared(result, { "set-cookie": "session=upstream", "mcp-session-id": "s-9" });
  const res = await post();
  expect(res.status).toBe(200);
  expect(await res.text()).toBe(result);
  expect(res.headers.get("set-cookie")).toBeNull();
  expect(res.headers.get("mcp-session-id")).toBe("s-9");
  expect(res.headers.get("content-security-policy")).toBe("sandbox; default-src 'none'");
  expect(await lastRecord()).toMatchObject({
    method: "tools/call",
    name: "lookup",
    outcome: "result",
    error_code: null,
    response_bytes: Buffer.byteLength(result),
  });

  const error = '{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"no such thing"}}';
  answer = () => declared(error);
  expect(await (await post()).text()).toBe(error);
  expect(await lastRecord()).toMatchObject({ outcome: "error", error_code: -32001, http_status: 200 });
});

for (const length of ["900", undefined]) {
  test(`an answer broken off (${length ? "before its declared length" : "chunked"}): 502 naming it, recorded as such, the caller's place given back`, async () => {
    answer = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('{"jsonrpc":"2.0","id":7,"res'));
            controller.error(new Error("connection reset"));
          },
        }),
        { headers: { "content-type": "application/json", ...(length && { "content-length": length }) } },
      );
    const res = await post();
    expect(res.status).toBe(502);
    expect(res.headers.get("content-type")).toStartWith("application/problem+json");
    expect((await res.json()).detail).toStartWith("The MCP server broke off its answer");
    expect(await lastRecord()).toMatchObject({ outcome: "http", http_status: 502 });
    // The place it held among the caller's open exchanges (one here), and the bytes it held, are back.
    answer = () => declared('{"jsonrpc":"2.0","id":7,"result":{}}');
    expect((await post()).status).toBe(200);
  });
}

test("an answer larger than the caller's held-bytes budget is not held whole: it streams, and is recorded from its end", async () => {
  const big = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"${"x".repeat(8000)}"}]}}`;
  answer = () => declared(big);
  const res = await post();
  expect(res.status).toBe(200);
  expect(await res.text()).toBe(big);
  expect(await lastRecord()).toMatchObject({ outcome: "result", response_bytes: big.length });
});

test("a client that goes away before the server answers: the server's request is aborted, the caller's place given back", async () => {
  let hang!: () => void;
  answer = () => new Promise<Response>((resolve) => (hang = () => resolve(declared("{}"))));
  const client = new AbortController();
  const pending = post({ signal: client.signal });
  await waitFor("the request to reach the server", () => reached !== undefined && !reached.aborted && hang !== undefined);
  client.abort();
  await waitFor("the server's request to be aborted", () => reached!.aborted, 2_000);
  expect((await pending).status).toBe(502);
  hang();
  answer = () => declared('{"jsonrpc":"2.0","id":7,"result":{}}');
  expect((await post()).status).toBe(200);
});
