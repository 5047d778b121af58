import { describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { Conflict, Unauthorized } from "../../src/http-errors/errors";
import { crossSitePlugin } from "../../src/http/cross-site";
import { apiBodyPlugin } from "../../src/http/json-body";
import { problemPlugin } from "../../src/http/problem-plugin";
import { createLogger } from "../../src/observability/logger";
import { readResponse } from "../support/api";

// The http/ plugins on a bare Elysia app of the test's own: each one's rule alone, without the service around it.
const ORIGIN = "http://cs.test";
const log = createLogger({ level: "error", write: () => {} });

/** A bare app: the problem renderer, then `plugin`, then routes that echo what reached them. */
type Bare = { handle(request: Request): Promise<Response> };
function bare(plugin?: unknown): Bare {
  const app = new Elysia({ normalize: false }).use(problemPlugin(log, new WeakMap()));
  return (plugin ? app.use(plugin as Elysia) : app)
    .post("/echo", ({ body }) => ({ body }), { body: t.Any() })
    .delete("/echo", () => ({ deleted: true }))
    .get("/conflict", () => {
      throw new Conflict("not now");
    })
    .get("/private", () => {
      throw new Unauthorized("who are you");
    })
    .post("/typed", ({ body }) => body, { body: t.Object({ n: t.Integer({ minimum: 0 }) }, { additionalProperties: false }) });
}

const send = (app: Bare, path: string, init: RequestInit = {}) =>
  app.handle(new Request(`${ORIGIN}${path}`, init)).then(readResponse);

describe("problemPlugin", () => {
  test("what a route throws, and Elysia's own validation, are RFC 9457 problem documents", async () => {
    const app = bare();
    const conflict = await send(app, "/conflict");
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get("content-type")).toStartWith("application/problem+json");
    expect(conflict.body).toMatchObject({ type: "/problems/conflict", status: 409, detail: "not now" });
    const invalid = await send(app, "/typed", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"n":"x"}',
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors[0].field).toBe("body.n");
    expect((await send(app, "/nowhere")).body).toMatchObject({ status: 404, detail: "No route for GET /nowhere" });
  });

  test("a value refused inside a union is described by the variant of its type, not as 'Expected union value'", async () => {
    const app = bare();
    const post = (body: string) => send(app, "/typed", { method: "POST", headers: { "content-type": "application/json" }, body });
    // Elysia's integer is a string or an integer: a number out of bounds is told as the integer's bounds.
    expect((await post('{"n":0.5}')).body.errors).toEqual([{ field: "body.n", detail: "Expected string or integer" }]);
    const low = await post('{"n":-1}');
    expect(low.body.errors).toEqual([{ field: "body.n", detail: "Expected integer to be greater or equal to 0" }]);
  });

  test("a 401 challenges a program for Basic, a browser only for Bearer", async () => {
    const app = bare();
    expect((await send(app, "/private")).headers.get("www-authenticate")).toContain("Basic");
    const browser = await send(app, "/private", { headers: { "sec-fetch-mode": "navigate" } });
    expect(browser.headers.get("www-authenticate")).toBe('Bearer realm="connector-service"');
  });
});

describe("apiBodyPlugin", () => {
  let authenticated = 0;
  const plugin = apiBodyPlugin({
    maxBytes: 200,
    authenticate: async (request) => {
      if (request.headers.get("authorization") !== "Bearer ok") throw new Unauthorized("no");
      authenticated++;
    },
  });
  const app = bare(plugin);
  const json = (body: string, headers: Record<string, string> = {}) =>
    send(app, "/echo", {
      method: "POST",
      headers: { authorization: "Bearer ok", "content-type": "application/json", ...headers },
      body,
    });

  test("credentials before the body: a refused caller's body is never read", async () => {
    let pulled = false;
    const body = new ReadableStream({ pull: () => void (pulled = true) }, { highWaterMark: 0 });
    const res = await send(app, "/echo", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(401);
    expect(pulled).toBe(false);
  });

  test("JSON only (415), within the size (413) and depth (422), parseable (400), no U+0000 (422)", async () => {
    expect((await json('{"a":1}')).body).toEqual({ body: { a: 1 } });
    expect((await json("a=1", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(415);
    expect((await json(`{"a":"${"x".repeat(300)}"}`)).status).toBe(413);
    expect((await json(`${"[".repeat(40)}${"]".repeat(40)}`)).status).toBe(422);
    expect((await json('{"a":')).status).toBe(400);
    const nul = await json('{"a":"\\u0000"}');
    expect(nul.status).toBe(422);
    expect(nul.body.errors[0].field).toBe("body.a");
    expect(authenticated).toBeGreaterThan(0);
  });
});

describe("crossSitePlugin", () => {
  const app = bare(crossSitePlugin(() => ORIGIN));

  test("a change a browser says comes from another site is refused (403); an untyped change from nowhere is a 415", async () => {
    const foreign = await send(app, "/echo", { method: "DELETE", headers: { origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(foreign.body.detail).toContain("https://evil.example");
    expect((await send(app, "/echo", { method: "POST", headers: { "sec-fetch-site": "same-site" } })).status).toBe(403);
    expect((await send(app, "/echo", { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" })).status).toBe(
      415,
    );
  });

  test("its own pages and programs with the JSON type go on; reads are never refused", async () => {
    expect((await send(app, "/echo", { method: "POST", headers: { "sec-fetch-site": "same-origin" } })).status).toBe(200);
    expect((await send(app, "/echo", { method: "POST", headers: { origin: ORIGIN } })).status).toBe(200);
    expect(
      (await send(app, "/echo", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status,
    ).toBe(200);
    expect(
      (await send(app, "/conflict", { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } })).status,
    ).toBe(409);
  });
});
