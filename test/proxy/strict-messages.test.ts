import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileToolPolicy } from "../../src/connectors/tool-policy";
import { rewriteResponse } from "../../src/proxy/tool-filter";
import { pagedToolsServer } from "../peers/paged-tools";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpPost } from "../support/mcp";

// A body the proxy cannot parse must not slip past the tool policy (or the audit trail) to a server
// that reads it anyway — Python's json takes NaN and UTF-16, Go's encoding/json reads "Name" as "name", others take the
// first of two equal names. Every such body is answered -32700 here and never reaches the server; what passes is
// sent on as the message that was checked, numbers exactly as written.
const DENIED = "danger";
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let guarded: string;
let audited: string;
const upstream = pagedToolsServer(["alpha", DENIED]);
/** Every POST body that reached the server, as bytes. */
const received: Uint8Array[] = [];

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://tools.example", async (request) => {
    if (request.method !== "POST") return upstream.handler(request);
    const bytes = new Uint8Array(await request.arrayBuffer());
    received.push(bytes);
    // A lenient server: what JSON.parse refuses it takes anyway (here: it answers; a real one ran the tool).
    try {
      JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      return Response.json({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "ran whatever it read" }] } });
    }
    return upstream.handler(new Request(request.url, { method: "POST", headers: request.headers, body: bytes }));
  });
  alice = await t.user("alice");
  guarded = await connectedConnector(alice.api, "https://tools.example/mcp");
  expect((await alice.api("PATCH", `/api/v1/connectors/${guarded}`, { body: { tool_policy: { deny: [DENIED] } } })).status).toBe(
    200,
  );
  audited = await connectedConnector(alice.api, "https://tools.example/audited");
});
afterAll(() => t.close());

const post = (id: string, body: Uint8Array<ArrayBuffer> | string, headers: Record<string, string> = {}) =>
  t.handle(mcpPost(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, alice.token, body, headers));

const call = (name: string, rest = "") =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":{}${rest}}}`;
const utf8 = (text: string): Uint8Array<ArrayBuffer> => new TextEncoder().encode(text);
const utf16le = (text: string, bom = true) =>
  new Uint8Array([...(bom ? [0xff, 0xfe] : []), ...new Uint8Array(Buffer.from(text, "utf16le"))]);

/** Bodies JSON.parse refuses or reads otherwise than some server would, each naming the denied tool. */
const ATTACKS: [string, Uint8Array<ArrayBuffer>][] = [
  ["NaN (Python's json takes it)", utf8(call(DENIED).replace('"arguments":{}', '"arguments":{"x":NaN}'))],
  ["Infinity", utf8(call(DENIED).replace('"arguments":{}', '"arguments":{"x":-Infinity}'))],
  ["UTF-16 with a byte order mark (Python's json.loads detects it)", utf16le(call(DENIED))],
  ["UTF-16 without one", utf16le(call(DENIED), false)],
  ["a UTF-8 byte order mark", new Uint8Array([0xef, 0xbb, 0xbf, ...utf8(call(DENIED))])],
  [
    "a byte that is not UTF-8",
    new Uint8Array([...utf8(call(DENIED).slice(0, -3)), 0x2c, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d, 0x7d]),
  ],
  ["trailing data", utf8(`${call("alpha")} ${call(DENIED)}`)],
  ["two values", utf8(`${call("alpha")}${call(DENIED)}`)],
  [
    "a name given twice, the denied one first (first-wins parsers)",
    utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${DENIED}","name":"alpha","arguments":{}}}`),
  ],
  [
    "method given twice, once escaped",
    utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/call","\\u006dethod":"tools/list","params":{"name":"${DENIED}"}}`),
  ],
  [
    "params given twice",
    utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${DENIED}"},"params":{"name":"alpha"}}`),
  ],
  [
    "a case variant of name (Go reads Name as name, the last one winning)",
    utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha","Name":"${DENIED}"}}`),
  ],
  [
    "a case variant of method",
    utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"${DENIED}"}}`),
  ],
  [
    "params spelt with a long s (U+017F folds to S in Go)",
    utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha"},"param\u017f":{"name":"${DENIED}"}}`),
  ],
  [
    "a duplicate in params._meta",
    utf8(
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${DENIED}","_meta":{"progressToken":1,"progressToken":2}}}`,
    ),
  ],
];

describe("a connector with a tool policy denying a tool", () => {
  for (const [what, body] of ATTACKS) {
    test(`${what}: -32700, and nothing reaches the server`, async () => {
      const before = received.length;
      const res = await post(guarded, body);
      expect(res.status).toBe(400);
      const answer = await res.json();
      expect(answer).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
      expect(answer.error.message).toStartWith("Parse error: ");
      expect(received.length).toBe(before);
    });
  }

  test('a tool name that is not a string is refused (JavaScript reads ["danger"] as the key "danger")', async () => {
    const before = received.length;
    const res = await post(guarded, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":["${DENIED}"]}}`);
    expect(await res.json()).toMatchObject({ id: 5, error: { code: -32602 } });
    expect(received.length).toBe(before);
  });

  test("messages that are not requests or notifications: -32600", async () => {
    const before = received.length;
    for (const body of [
      '"tools/call"',
      "[]",
      "42",
      '{"method":["tools/call"],"id":1}',
      '{"method":"tools/call","params":"danger","id":1}',
    ]) {
      const res = await post(guarded, body);
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe(-32600);
    }
    expect(received.length).toBe(before);
  });

  test("a checked call goes on as the message that was checked: re-serialised, every number exactly as written", async () => {
    // Past 2^53 JSON.parse rounds an integer, and stringify writes 1.0 as 1, 1e400 as null, -0 as 0: data changed.
    const body = `{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"alpha","arguments":{"big":123456789012345678901234567890,"one":1.0,"huge":1e400,"zero":-0,"small":0.1000000000000000055511151231257827,"e":1E3}}}`;
    const spaced = body.replaceAll(",", ", ").replace('"alpha"', '"\\u0061lpha"');
    const before = received.length;
    await post(guarded, spaced);
    // What the server makes of 1e400 is its own affair (the SDK's refuses it): it got the numbers as the client wrote them.
    expect(received.length).toBe(before + 1);
    expect(new TextDecoder().decode(received.at(-1))).toBe(body);
  });

  test("a refused tool's answer keeps the request's id exactly", async () => {
    const res = await post(
      guarded,
      `{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"${DENIED}"}}`,
    );
    expect(await res.text()).toBe(
      '{"jsonrpc":"2.0","id":12345678901234567890,"error":{"code":-32602,"message":"Unknown tool: danger"}}',
    );
  });
});

test("a listing's answer that cannot be read strictly is not passed on: the client gets an error for its listing instead", async () => {
  const view = compileToolPolicy({ deny: [DENIED] });
  const listing = (extra: string) => `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"alpha"}]},${extra}}`;
  // "Result" reads as "result" to Go's encoding/json (the last one wins): the denied tool would be listed.
  const smuggled = listing(`"Result":{"tools":[{"name":"alpha"},{"name":"${DENIED}"}]}`);
  const json = await rewriteResponse(
    new Response(smuggled, { headers: { "content-type": "application/json" } }),
    new Set(["3"]),
    view,
    1 << 20,
  );
  const answer = await json.json();
  expect(answer).toMatchObject({ id: 3, error: { code: -32603 } });
  expect(JSON.stringify(answer)).not.toContain(`"name":"${DENIED}"`);
  const events = `id: 7\nevent: message\ndata: ${smuggled}\n\n`;
  const sse = await (
    await rewriteResponse(
      new Response(events, { headers: { "content-type": "text/event-stream" } }),
      new Set(["3"]),
      view,
      1 << 20,
    )
  ).text();
  expect(sse).toStartWith("id: 7\nevent: message\ndata: ");
  expect(JSON.parse(sse.split("data: ")[1]!)).toMatchObject({ id: 3, error: { code: -32603 } });
  expect(sse).not.toContain(`"name":"${DENIED}"`);
});

describe("the audit trail (on by default) on a connector without a policy", () => {
  test("records a body it cannot read as refused, and the server never gets it", async () => {
    const before = received.length;
    const res = await post(audited, utf8(call("alpha").replace('"arguments":{}', '"arguments":{"x":NaN}')));
    expect(res.status).toBe(400);
    expect(received.length).toBe(before);
    const [record] = (await alice.api("GET", `/api/v1/audit?connector_id=${audited}&limit=1`)).body.items;
    expect(record).toMatchObject({ method: null, outcome: "error", error_code: -32700, http_status: 400 });
  });

  test("Mcp-Method and Mcp-Name must say what the body says: the record is what the server got", async () => {
    const before = received.length;
    const res = await post(audited, call(DENIED), { "mcp-method": "tools/call", "mcp-name": "alpha" });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: -32600, message: "Mcp-Name says alpha, the body danger" });
    expect(received.length).toBe(before);
    // A name that is not plain ASCII travels base64-encoded in the header (2026-07-28): read as the client meant it.
    const encoded = (name: string) => `=?base64?${Buffer.from(name).toString("base64")}?=`;
    const agreeing = await post(audited, call("café"), { "mcp-method": "tools/call", "mcp-name": encoded("café") });
    expect(agreeing.status).toBe(200);
    expect(received.length).toBe(before + 1);
    const disagreeing = await post(audited, call("café"), { "mcp-method": "tools/call", "mcp-name": encoded(DENIED) });
    expect(disagreeing.status).toBe(400);
    expect(received.length).toBe(before + 1);
  });
});

test("with nothing that reads bodies (no policy, AUDIT__ENABLED=false) the proxy decides nothing and streams the bytes as sent", async () => {
  const app = await createTestApp({ env: { AUDIT__ENABLED: "false" } });
  try {
    const seen: string[] = [];
    app.network.serve("https://open.example", async (request) => {
      if (request.method === "POST") seen.push(await request.clone().text());
      return upstream.handler(request);
    });
    const id = await connectedConnector(app.api, "https://open.example/mcp");
    const body = call("alpha").replace('"arguments":{}', '"arguments":{"x":NaN}');
    await app.handle(
      new Request(`${app.publicUrl}/api/v1/connectors/${id}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${app.admin.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body,
      }),
    );
    expect(seen.at(-1)).toBe(body);
  } finally {
    await app.close();
  }
});
