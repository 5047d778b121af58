import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// CORS for browser-based MCP clients, through app.handle: what a browser on another origin may call (the proxy, the
// metadata documents, the token, registration and revocation endpoints) and what it may read of the answers.
const APP = "https://app.example";
const PING = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function setUp(env: Record<string, string> = {}) {
  const t = await createTestApp({ env });
  const upstream = scriptedServer();
  // An upstream that sets CORS headers of its own: they must not reach the browser.
  t.network.serve("https://mcp.example", async (request) => {
    const response = await upstream.handler(request);
    const headers = new Headers(response.headers);
    headers.set("access-control-allow-origin", "https://evil.example");
    headers.set("access-control-allow-credentials", "true");
    return new Response(response.body, { status: response.status, headers });
  });
  const alice = await t.user("alice");
  const id = await connectedConnector(alice.api, "https://mcp.example/mcp");
  return { t, alice, proxy: `${t.publicUrl}/api/v1/connectors/${id}/mcp` };
}

const preflight = (url: string, origin: string, method = "POST", headers = "authorization, content-type, mcp-protocol-version") =>
  new Request(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
  });

describe("with any origin allowed (the default)", () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => void (s = await setUp()));
  afterAll(() => s.t.close());

  test("the proxy answers a preflight without credentials, allowing its methods and the headers asked for", async () => {
    const res = await s.t.handle(preflight(s.proxy, APP));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toBe("POST, GET, DELETE");
    expect(res.headers.get("access-control-allow-headers")).toBe("authorization, content-type, mcp-protocol-version");
    expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
  });

  test("a browser can read the 401's challenge and, once authorized, the session id; the upstream's CORS headers are not relayed", async () => {
    const challenged = await s.t.handle(
      new Request(s.proxy, { method: "POST", headers: { origin: APP, ...MCP_HEADERS }, body: PING }),
    );
    expect(challenged.status).toBe(401);
    expect(challenged.headers.get("access-control-allow-origin")).toBe("*");
    const exposed = challenged.headers.get("access-control-expose-headers")!.toLowerCase();
    expect(exposed).toContain("www-authenticate");
    expect(exposed).toContain("mcp-session-id");

    const relayed = await s.t.handle(
      new Request(s.proxy, {
        method: "POST",
        headers: { origin: APP, authorization: `Bearer ${s.alice.token}`, ...MCP_HEADERS },
        body: PING,
      }),
    );
    expect(relayed.status).toBe(200);
    expect(relayed.headers.get("access-control-allow-origin")).toBe("*");
    expect(relayed.headers.get("access-control-allow-credentials")).toBeNull();
    expect(await relayed.text()).toContain('"result"');
  });

  test("the metadata documents and the token, registration and revocation endpoints are open to other origins", async () => {
    const id = s.proxy.split("/").at(-2)!;
    for (const path of [
      "/.well-known/oauth-authorization-server",
      "/.well-known/oauth-protected-resource",
      `/.well-known/oauth-protected-resource/api/v1/connectors/${id}/mcp`,
    ]) {
      const res = await s.t.handle(new Request(`${s.t.publicUrl}${path}`, { headers: { origin: APP } }));
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(
        (await s.t.handle(preflight(`${s.t.publicUrl}${path}`, APP, "GET", "mcp-protocol-version"))).headers.get(
          "access-control-allow-methods",
        ),
      ).toBe("GET");
    }
    for (const path of ["/oauth/token", "/oauth/register", "/oauth/revoke"]) {
      const allowed = await s.t.handle(preflight(`${s.t.publicUrl}${path}`, APP, "POST", "content-type"));
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get("access-control-allow-methods")).toBe("POST");
    }
    // An error answer is readable too: the client must see why.
    const refused = await s.t.handle(
      new Request(`${s.t.publicUrl}/oauth/token`, {
        method: "POST",
        headers: { origin: APP, "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=authorization_code&code=nope",
      }),
    );
    expect(refused.status).toBe(400);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    expect((await refused.json()).error).toBe("invalid_request");
  });

  test("the REST API and the authorization page stay same-origin", async () => {
    const api = await s.t.handle(
      new Request(`${s.t.publicUrl}/api/v1/connectors`, { headers: { origin: APP, authorization: `Bearer ${s.alice.token}` } }),
    );
    expect(api.status).toBe(200);
    expect(api.headers.get("access-control-allow-origin")).toBeNull();
    const page = await s.t.handle(new Request(`${s.t.publicUrl}/oauth/authorize`, { headers: { origin: APP } }));
    expect(page.headers.get("access-control-allow-origin")).toBeNull();
    expect(
      (await s.t.handle(preflight(`${s.t.publicUrl}/api/v1/connectors`, APP))).headers.get("access-control-allow-origin"),
    ).toBeNull();
  });
});

describe("with CORS__ALLOWED_ORIGINS naming origins", () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => void (s = await setUp({ CORS__ALLOWED_ORIGINS: `${APP},http://localhost:6274` })));
  afterAll(() => s.t.close());

  test("a listed origin is echoed (and caches vary on it); another is refused its preflight and gets no CORS headers", async () => {
    const allowed = await s.t.handle(preflight(s.proxy, "http://localhost:6274"));
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("http://localhost:6274");
    expect(allowed.headers.get("vary")).toContain("Origin");

    const other = await s.t.handle(preflight(s.proxy, "https://evil.example"));
    expect(other.status).toBe(403);
    expect(other.headers.get("content-type")).toBe("application/problem+json");
    expect((await other.json()).detail).toContain("CORS__ALLOWED_ORIGINS");
    expect(other.headers.get("access-control-allow-origin")).toBeNull();

    const relayed = await s.t.handle(
      new Request(s.proxy, {
        method: "POST",
        headers: { origin: "https://evil.example", authorization: `Bearer ${s.alice.token}`, ...MCP_HEADERS },
        body: PING,
      }),
    );
    expect(relayed.status).toBe(200);
    expect(relayed.headers.get("access-control-allow-origin")).toBeNull();

    const listed = await s.t.handle(
      new Request(s.proxy, {
        method: "POST",
        headers: { origin: APP, authorization: `Bearer ${s.alice.token}`, ...MCP_HEADERS },
        body: PING,
      }),
    );
    expect(listed.headers.get("access-control-allow-origin")).toBe(APP);
    expect(listed.headers.get("vary")).toContain("Origin");
  });
});
