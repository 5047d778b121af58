import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app";
import { expectProblem } from "../support/api";

let t: TestApp;
let id: string;
beforeAll(async () => {
  t = await createTestApp();
  id = (await t.api("POST", "/api/v1/connectors", { body: { url: "https://headers.example/mcp" } })).body.id;
});
afterAll(() => t.close());

// docs/interface.md §4.4: hop-by-hop, forwarding, Host and cookie headers are refused.
const BLOCKED = [
  "Connection",
  "Keep-Alive",
  "Proxy-Connection",
  "TE",
  "Trailer",
  "Transfer-Encoding",
  "Upgrade",
  "Proxy-Authorization",
  "Proxy-Authenticate",
  "Forwarded",
  "X-Forwarded-For",
  "X-Forwarded-Host",
  "X-Forwarded-Proto",
  "Via",
  "Host",
  "Cookie",
  "Set-Cookie",
];

const casings = (name: string) => [
  name,
  name.toLowerCase(),
  name.toUpperCase(),
  name.replace(/[a-z]/g, (c, i) => (i % 2 ? c.toUpperCase() : c)),
];

test.each(BLOCKED)("%s is refused in every casing with a 422 naming it", async (header) => {
  for (const name of casings(header)) {
    const res = await t.api("POST", `/api/v1/connectors/${id}/connect`, {
      body: { headers: { Authorization: "Bearer fine", [name]: "value" } },
    });
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe(`body.headers.${name}`);
    expect(res.body.detail).toContain(name);
  }
  // Nothing was stored by the refused requests.
  const got = await t.api("GET", `/api/v1/connectors/${id}`);
  expect(got.body.state).toBe("created");
  expect(got.body.header_names).toEqual([]);
});

test.each([
  ["an emoji", "Bearer 🔑", "U+1F511"],
  ["a line separator", "a\u2028b", "U+2028"],
  ["a control byte", "a\u0001b", "U+0001"],
  ["DEL", "a\u007fb", "U+007F"],
  ["a NUL", "a\u0000b", "U+0000"],
])("a value with %s is a 422 naming the header and the character, before any server is contacted", async (_what, value, code) => {
  const contacted = t.network.requests.length;
  const res = await t.api("POST", `/api/v1/connectors/${id}/connect`, { body: { headers: { "X-Key": value } } });
  expectProblem(res, 422);
  expect(res.body.errors[0].field).toBe("body.headers.X-Key");
  expect(res.body.detail).toContain(code);
  expect(t.network.requests.length).toBe(contacted);
});

test("Latin-1 letters, spaces and tabs are fine in a value", async () => {
  t.network.serve("https://latin1.example", () => new Response(null, { status: 401 }));
  const own = (await t.api("POST", "/api/v1/connectors", { body: { url: "https://latin1.example/mcp" } })).body.id;
  const res = await t.api("POST", `/api/v1/connectors/${own}/connect`, { body: { headers: { "X-Name": "José\tMüller" } } });
  // Accepted as a value: the handshake ran (the server refused it, which is another matter).
  expect(res.body.type).toBe("/problems/upstream-rejected-credentials");
});

test("an invalid header name or a value with CR/LF is refused", async () => {
  for (const headers of [{ "Bad Name": "v" }, { "X-Ok": "a\r\nInjected: yes" }, { "": "v" }]) {
    const res = await t.api("POST", `/api/v1/connectors/${id}/connect`, { body: { headers } });
    expectProblem(res, 422);
  }
});

test("a header value that is not a string is refused", async () => {
  const res = await t.api("POST", `/api/v1/connectors/${id}/connect`, { body: { headers: { "X-Num": 5 } } });
  expectProblem(res, 422);
});
