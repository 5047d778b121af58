import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { nestingExceeds } from "../../src/http/json-body";
import { expectProblem, readResponse } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";

// The API's body rules (http/json-body.ts), through app.handle.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** A request body that records whether anything read it. */
function watchedBody(text: string) {
  const read = { pulls: 0 };
  const bytes = new TextEncoder().encode(text);
  // highWaterMark 0: nothing is pulled until a reader asks.
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        read.pulls++;
        controller.enqueue(bytes);
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  return { body, read };
}

const post = (path: string, body: BodyInit | null, headers: Record<string, string>) =>
  t
    .handle(new Request(`${t.publicUrl}${path}`, { method: "POST", headers, body, duplex: "half" } as RequestInit))
    .then(readResponse);

describe("credentials before the body", () => {
  test.each([
    ["no credentials", {}],
    ["a wrong password", { authorization: `Basic ${btoa("admin:wrong")}` }],
    ["an unknown token", { authorization: "Bearer cst_unknown" }],
  ])("%s: 401, and not a byte of the body read", async (_what, headers: Record<string, string>) => {
    const deep = `{"url":"https://a.example","metadata":{"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}}`;
    const { body, read } = watchedBody(deep);
    const res = await post("/api/v1/connectors", body, { "content-type": "application/json", ...headers });
    expectProblem(res, 401);
    expect(read.pulls).toBe(0);
  });
});

describe("what a body may be", () => {
  test("JSON nested deeper than 32 levels is a 422 that says so, before it is parsed or stored", async () => {
    const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}1${"}".repeat(depth - 1)}`;
    const ok = await post("/api/v1/connectors", `{"url":"https://ok.example","metadata":${nested(30)}}`, {
      "content-type": "application/json",
      authorization: `Bearer ${t.admin.token}`,
    });
    expect(ok.status).toBe(201);
    const deep = await post("/api/v1/connectors", `{"url":"https://deep.example","metadata":${nested(40)}}`, {
      "content-type": "application/json",
      authorization: `Bearer ${t.admin.token}`,
    });
    expectProblem(deep, 422);
    expect(deep.body.detail).toBe("body: nests deeper than 32 levels");
    const list = await t.api("GET", "/api/v1/connectors?limit=100");
    expect(list.body.items.map((c: { url: string }) => c.url)).not.toContain("https://deep.example/");
  });

  test("a body that is not JSON is a 415 naming the media type to send; an empty one is no body, but still wants the JSON type", async () => {
    const auth = { authorization: `Bearer ${t.admin.token}` };
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const res = await post("/api/v1/connectors", "url=https://a.example", { "content-type": type, ...auth });
      expectProblem(res, 415);
      expect(res.body.detail).toContain("Content-Type: application/json");
    }
    const created = (await t.api("POST", "/api/v1/connectors", { body: { url: "https://empty.example/mcp" } })).body;
    // No body at all on an action that takes none, or an optional one: fine, with the JSON content type (which an
    // HTML form of another site cannot send).
    expect(
      (await post(`/api/v1/connectors/${created.id}/disconnect`, null, { ...auth, "content-type": "application/json" })).status,
    ).toBe(409);
    const untyped = await post(`/api/v1/connectors/${created.id}/disconnect`, null, auth);
    expectProblem(untyped, 415);
    expect(untyped.body.detail).toContain("Content-Type: application/json, even without a body");
  });

  test("brackets and escaped quotes inside strings do not count as nesting", () => {
    expect(nestingExceeds(`{"a":"${"[".repeat(100)}\\"${"{".repeat(100)}"}`, 2)).toBe(false);
    expect(nestingExceeds("[[[]]]", 2)).toBe(true);
    expect(nestingExceeds("[[],[],[]]", 2)).toBe(false);
  });
});

describe("what no store can hold", () => {
  test("U+0000 anywhere in a body is a 422 naming the field, on either store; nothing is stored", async () => {
    const before = (await t.api("GET", "/api/v1/connectors?limit=100")).body.items.length;
    const res = await t.api("POST", "/api/v1/connectors", {
      raw: '{"url":"https://nul.example/mcp","metadata":{"name":"a\\u0000b"}}',
    });
    expectProblem(res, 422);
    expect(res.body.detail).toBe("body.metadata.name: contains U+0000 (NUL), which is not accepted");
    expect((await t.api("GET", "/api/v1/connectors?limit=100")).body.items.length).toBe(before);
    // An escaped backslash before "u0000" is text, not NUL.
    expect(
      (await t.api("POST", "/api/v1/connectors", { raw: '{"url":"https://nul.example/mcp","metadata":{"name":"a\\\\u0000b"}}' }))
        .status,
    ).toBe(201);
  });

  test("an id with control characters is a 422; a user name no user can have is a plain 401", async () => {
    const res = await t.api("GET", "/api/v1/connectors/a%00b");
    expectProblem(res, 422);
    expect(res.body.detail).toContain("id: must not contain control characters");
    expectProblem(await t.apiOf({ username: "ad\u0000min", password: "x" })("GET", "/api/v1/connectors"), 401);
  });
});

describe("query parameters", () => {
  test.each(["0", "-1", "101", "1000000", "0x10", "1e1", " 5", "5.0", "abc"])(
    "limit=%p is a 422 naming query.limit",
    async (limit) => {
      const res = await t.api("GET", `/api/v1/connectors?limit=${encodeURIComponent(limit)}`);
      expectProblem(res, 422);
      expect(res.body.errors[0].field).toBe("query.limit");
      expect(res.body.detail).toBe("query.limit: must be a whole number from 1 to 100");
    },
  );

  test("limit 1 and 100 are pages of that size", async () => {
    expect((await t.api("GET", "/api/v1/connectors?limit=1")).status).toBe(200);
    expect((await t.api("GET", "/api/v1/connectors?limit=100")).status).toBe(200);
  });
});
