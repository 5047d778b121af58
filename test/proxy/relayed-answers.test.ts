import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { a2aAgent } from "../peers/a2a-agent";
import { scriptedServer } from "../peers/scripted-server";
import { authHeader } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// Nothing relayed by the MCP or A2A proxy may render, run or redirect in a browser on the
// service's origin. An upstream answers as the test says (an MCP server for connect's handshake, else `answer`).
const mcp = scriptedServer();
let answer: ((request: Request) => Response) | undefined;
let t: TestApp;
let id: string;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://tricky.example", (request) => answer?.(request) ?? mcp.handler(request));
  id = await connectedConnector(t.api, "https://tricky.example/mcp");
});
afterAll(() => t.close());

const proxied = (method = "GET") =>
  t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
      method,
      headers: {
        authorization: `Bearer ${t.admin.token}`,
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-session-id": "s-1",
      },
      ...(method === "POST" && { body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) }),
    }),
  );

const PAGE = "<!doctype html><script>fetch('/api/v1/tokens',{method:'POST'})</script>";

describe("types a browser would render", () => {
  for (const type of [
    "text/html; charset=utf-8",
    "TEXT/HTML",
    "image/svg+xml",
    "application/xhtml+xml",
    "text/xml",
    "text/plain",
    "application/javascript",
    "multipart/x-mixed-replace; boundary=x",
  ]) {
    test(`${type}: a 502 naming it, the body never sent`, async () => {
      answer = () => new Response(PAGE, { headers: { "content-type": type } });
      const res = await proxied();
      expect(res.status).toBe(502);
      expect(res.headers.get("content-type")).toStartWith("application/problem+json");
      const text = await res.text();
      expect(text).not.toContain("<script");
      expect(JSON.parse(text)).toMatchObject({ type: "/problems/upstream-answer-refused" });
      expect(JSON.parse(text).detail).toContain(JSON.stringify(type));
    });
  }

  test("a body with no declared type: 502 (a browser would sniff it)", async () => {
    answer = () => new Response(new TextEncoder().encode(PAGE), { headers: {} });
    const res = await proxied();
    expect(res.status).toBe(502);
    expect((await res.json()).detail).toContain("a body of no declared type");
  });

  test("an HTML error page keeps its status (404 still tells a client its session is gone), not its body", async () => {
    answer = () => new Response(PAGE, { status: 404, headers: { "content-type": "text/html" } });
    const res = await proxied();
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toStartWith("application/problem+json");
    expect(await res.text()).not.toContain("<script");
  });
});

test("a redirect is never passed on as one of the service's own: 502, no Location", async () => {
  for (const status of [301, 302, 303, 307, 308]) {
    answer = () => new Response(null, { status, headers: { location: "https://phish.example/login" } });
    const res = await proxied();
    expect(res.status).toBe(502);
    expect(res.headers.get("location")).toBeNull();
    expect((await res.json()).detail).toContain("https://phish.example/login");
  }
});

test("only the protocol's own headers come back, with a sandboxing CSP and nosniff", async () => {
  answer = () =>
    new Response('{"jsonrpc":"2.0","id":1,"result":{}}', {
      headers: {
        "content-type": "application/json",
        "mcp-session-id": "s-1",
        "cache-control": "no-store",
        refresh: "0; url=https://phish.example/",
        link: "<https://phish.example/x.css>; rel=stylesheet",
        location: "https://phish.example/",
        "set-cookie": "cs_session=stolen; Path=/",
        "clear-site-data": '"cookies"',
        nel: '{"report_to":"x","max_age":31536000}',
        "report-to": '{"group":"x","max_age":31536000,"endpoints":[{"url":"https://phish.example/r"}]}',
        "alt-svc": 'h2="phish.example:443"',
        "strict-transport-security": "max-age=31536000; includeSubDomains",
        "access-control-allow-origin": "https://phish.example",
        "content-disposition": "inline; filename=x.html",
        "www-authenticate": 'Bearer resource_metadata="https://phish.example/.well-known/oauth-protected-resource"',
        "x-frame-options": "ALLOWALL",
      },
    });
  const res = await proxied();
  expect(res.status).toBe(200);
  const names = [...res.headers.keys()];
  for (const dropped of [
    "refresh",
    "link",
    "location",
    "set-cookie",
    "clear-site-data",
    "nel",
    "report-to",
    "alt-svc",
    "strict-transport-security",
    "content-disposition",
    "www-authenticate",
    "x-frame-options",
  ]) {
    expect(names).not.toContain(dropped);
  }
  // CORS is the service's own (http/cors.ts): no origin of the upstream's choosing.
  expect(res.headers.get("access-control-allow-origin")).not.toBe("https://phish.example");
  expect(res.headers.get("content-security-policy")).toBe("sandbox; default-src 'none'");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("mcp-session-id")).toBe("s-1");
  expect(res.headers.get("cache-control")).toBe("no-store");
});

test("answers without a body still pass, typed or not: 202, 204, a DELETE's empty 200", async () => {
  for (const [method, status, headers] of [
    ["POST", 202, {}],
    ["DELETE", 204, {}],
    ["DELETE", 200, {}],
    ["POST", 202, { "content-type": "text/html" }],
  ] as const) {
    answer = () => new Response(status === 204 ? null : new ReadableStream({ start: (c) => c.close() }), { status, headers });
    const res = await proxied(method);
    expect({ method, status: res.status }).toEqual({ method, status });
    expect(await res.text()).toBe("");
  }
});

test("the A2A relay too: an agent answering HTML gets a 502", async () => {
  const agent = a2aAgent("https://html-agent.example");
  t.network.serve("https://html-agent.example", (request) =>
    request.method === "POST" ? new Response(PAGE, { headers: { "content-type": "text/html" } }) : agent.handler(request),
  );
  const provider = (await t.api("POST", "/api/v1/providers", { body: { agent_card_url: agent.cardUrl } })).body.id;
  const res = await t.handle(
    new Request(`${t.publicUrl}/api/v1/a2a/${provider}/`, {
      method: "POST",
      headers: { authorization: authHeader(t.admin.basic), "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: {} }),
    }),
  );
  expect(res.status).toBe(502);
  expect(await res.text()).not.toContain("<script");
});
