import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());
const get = (path: string) => t.handle(new Request(`${t.publicUrl}${path}`));

test("OpenAPI 3.1 lists every route with a summary and typed responses", async () => {
  const res = await get("/openapi.json");
  expect(res.status).toBe(200);
  const doc = await res.json();
  expect(doc.openapi).toStartWith("3.1");
  const expected = [
    "post /api/v1/connectors",
    "get /api/v1/connectors",
    "get /api/v1/connectors/{id}",
    "delete /api/v1/connectors/{id}",
    "post /api/v1/connectors/{id}/connect",
    "post /api/v1/connectors/{id}/disconnect",
    "get /api/v1/connectors/presets",
    "post /api/v1/users",
    "post /api/v1/tokens",
    "get /healthz",
    "get /readyz",
    "get /metrics",
    "post /api/v1/connectors/{id}/mcp",
    "get /api/v1/connectors/{id}/mcp",
    "delete /api/v1/connectors/{id}/mcp",
    "get /api/v1/connectors/oauth/callback",
    "post /api/v1/providers",
    "get /api/v1/a2a/{provider_id}/.well-known/agent-card.json",
    "post /api/v1/a2a/{provider_id}",
  ];
  const operations: [string, any][] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) operations.push([`${method} ${path.replace(/\/$/, "")}`, op]);
  }
  const names = operations.map(([n]) => n);
  for (const e of expected) expect(names).toContain(e);
  for (const [name, op] of operations) {
    expect({ name, summary: typeof op.summary }).toEqual({ name, summary: "string" });
    const ok = Object.keys(op.responses ?? {}).filter((s) => s.startsWith("2"));
    expect({ name, ok: ok.length > 0 }).toEqual({ name, ok: true });
    if (["post", "put", "patch"].includes(name.split(" ")[0]!) && name.includes("/api/")) {
      // Actions without a body: disconnect, refresh. Every other one shows the JSON schema its body is validated by
      // (the callback's confirmation is a page's form).
      if (!/\/(disconnect|refresh)$/.test(name)) {
        const content = op.requestBody?.content;
        const schema =
          content?.["application/json"]?.schema ??
          (name.endsWith("/oauth/callback") ? content?.["application/x-www-form-urlencoded"]?.schema : undefined);
        expect({ name, schema: typeof schema }).toEqual({ name, schema: "object" });
      }
    }
  }
});

test("request bodies in OpenAPI are the schemas that validate them; only connect's may be left out", async () => {
  const doc = await (await get("/openapi.json")).json();
  const body = (path: string) => doc.paths[path].post.requestBody;
  expect(body("/api/v1/connectors").required).toBe(true);
  expect(body("/api/v1/connectors").content["application/json"].schema).toMatchObject({
    type: "object",
    required: ["url"],
    additionalProperties: false,
    properties: { url: { type: "string", maxLength: 2048 }, match_preset: { type: "boolean" } },
  });
  expect(body("/api/v1/connectors/{id}/connect").required).toBe(false);
  expect(Object.keys(body("/api/v1/connectors/{id}/connect").content["application/json"].schema.properties).sort()).toEqual([
    "accessToken",
    "headers",
    "redirect_url",
  ]);
  expect(body("/api/v1/users").content["application/json"].schema.required).toEqual(["username", "password"]);
  // The relays document their bodies as JSON too, though they stream them unread.
  expect(Object.keys(body("/api/v1/connectors/{id}/mcp").content)).toEqual(["application/json"]);
  expect(JSON.stringify(doc)).not.toContain("x-optional-body");
  // What the document says is what the validator does: a field it does not list is refused.
  const refused = await t.api("POST", "/api/v1/connectors", { body: { url: "https://a.example", colour: "red" } });
  expect(refused.status).toBe(422);
  const connected = await t.api(
    "POST",
    `/api/v1/connectors/${(await t.api("POST", "/api/v1/connectors", { body: { url: "https://a.example" } })).body.id}/connect`,
  );
  expect(connected.status).not.toBe(422); // no body at all is accepted, as the document says
});

test("every refusal is documented as the problem+json the service sends, with the refusals common to a kind of route", async () => {
  const doc = await (await get("/openapi.json")).json();
  const create = doc.paths["/api/v1/connectors"].post.responses;
  for (const status of ["400", "401", "413", "415", "422", "429", "503"]) {
    expect({ status, types: Object.keys(create[status]?.content ?? {}) }).toEqual({
      status,
      types: ["application/problem+json"],
    });
  }
  expect(create["429"].headers["retry-after"]).toBeDefined();
  // A relay streams its body unread: no 415 or 400 for it, but its size limit holds.
  const relay = doc.paths["/api/v1/connectors/{id}/mcp"].post.responses;
  expect(Object.keys(relay)).toContain("413");
  expect(Object.keys(relay)).not.toContain("415");
  // Public routes take no credentials, so they cannot be refused for them.
  expect(Object.keys(doc.paths["/healthz"].get.responses)).toEqual(["200"]);
  expect(JSON.stringify(doc)).not.toContain("x-own-body");
  // What the document says is what is sent.
  const refused = await t.api("POST", "/api/v1/connectors", { raw: "not json", headers: { "content-type": "text/plain" } });
  expect(refused.status).toBe(415);
  expect(refused.headers.get("content-type")).toStartWith("application/problem+json");
});

test("paths have no trailing slash; a page size is one integer; error pages are text/html; every other refusal is problem+json", async () => {
  const doc = await (await get("/openapi.json")).json();
  expect(Object.keys(doc.paths).filter((path) => path.length > 1 && path.endsWith("/"))).toEqual([]);
  expect(doc.paths["/api/v1/connectors"].get.parameters.find((p: { name: string }) => p.name === "limit").schema).toMatchObject({
    type: "integer",
    minimum: 1,
    maximum: 100,
  });
  expect(JSON.stringify(doc)).not.toContain("x-integer");
  // The OAuth endpoints answer as their RFCs say (JSON errors), the pages as HTML, the MCP proxy's unreadable bodies as
  // JSON-RPC errors; everything else as problems.
  const own = /^\/oauth\/|^\/api\/v1\/connectors\/oauth\/callback$/;
  for (const [path, item] of Object.entries(
    doc.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>,
  )) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        const types = Object.keys(response.content ?? {});
        // The MCP proxy refuses a body it cannot read as MCP does: a JSON-RPC error (-32700, -32600), HTTP 400; a
        // virtual server's endpoint likewise, and answers an unknown session's 404 as a JSON-RPC error too.
        if (path === "/api/v1/connectors/{id}/mcp" && status === "400") expect(types).toEqual(["application/json"]);
        else if (path === "/api/v1/virtual-servers/{id}/mcp" && (status === "400" || status === "404"))
          expect(types).toEqual(["application/json"]);
        else if (own.test(path))
          expect({ path, method, status, ok: types.every((t) => t === "text/html" || t === "application/json") }).toEqual({
            path,
            method,
            status,
            ok: true,
          });
        else expect({ path, method, status, types }).toEqual({ path, method, status, types: ["application/problem+json"] });
      }
    }
  }
});

test("Swagger UI at /docs loads nothing from another host and runs nothing inline; it cannot be framed or sniffed", async () => {
  const page = await get("/docs");
  const csp = page.headers.get("content-security-policy")!;
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("script-src 'self';");
  expect(csp).not.toContain("unsafe");
  expect(page.headers.get("x-content-type-options")).toBe("nosniff");
  expect((await get("/openapi.json")).headers.get("x-content-type-options")).toBe("nosniff");
  const html = await page.text();
  // Every script is a file of this origin (the policy would refuse an inline one anyway).
  expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
  expect(html).toContain("swagger-ui");
  const refs = [...html.matchAll(/(?:src|href)\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]!);
  expect(refs.length).toBeGreaterThanOrEqual(2);
  for (const ref of refs) {
    expect(ref).toStartWith("/");
    const asset = await get(ref);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
    if (ref.endsWith(".css")) {
      const css = await asset.text();
      const urls = [...css.matchAll(/url\(\s*["']?([^"')]+)/g)].map((m) => m[1]!);
      for (const u of urls) expect(u.startsWith("data:") || !/^[a-z]+:\/\//i.test(u)).toBe(true);
    } else {
      await asset.arrayBuffer();
    }
  }
  expect(html).not.toMatch(/(?:src|href)\s*=\s*["']https?:\/\//);
  // The validator badge would fetch from an outside host.
  expect(await (await get("/docs/assets/docs.js")).text()).toContain('validatorUrl: "none"');
});

test("unknown routes are problem+json 404s", async () => {
  const res = await get("/nope");
  expect(res.status).toBe(404);
  expect(res.headers.get("content-type")).toStartWith("application/problem+json");
});

test("health and readiness need no credentials", async () => {
  expect(await (await get("/healthz")).json()).toEqual({ status: "ok" });
  expect(await (await get("/readyz")).json()).toEqual({ status: "ok" });
});
