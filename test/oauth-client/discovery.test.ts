import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app";
import { expectProblem } from "../support/api";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/**
 * An MCP server whose authorization metadata the test shapes, to check discovery's order and its refusals,
 * served in-process at its own origin. Only discovery documents are served: the flow never gets past them.
 */
function metadataServer(options: {
  issuerPath: string;
  servedAt: string;
  s256: boolean;
  registration?: boolean;
  authorizationEndpoint?: string;
}) {
  const requests: string[] = [];
  const origin = `https://mcp-${crypto.randomUUID().slice(0, 8)}.example`;
  t.network.serve(origin, (request) => {
    const { pathname } = new URL(request.url);
    requests.push(pathname);
    if (pathname === "/mcp") {
      return new Response(null, {
        status: 401,
        headers: { "www-authenticate": `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` },
      });
    }
    if (pathname === "/.well-known/oauth-protected-resource/mcp") {
      return Response.json({ resource: `${origin}/mcp`, authorization_servers: [`${origin}${options.issuerPath}`] });
    }
    if (pathname === options.servedAt) {
      return Response.json({
        issuer: `${origin}${options.issuerPath}`,
        authorization_endpoint: options.authorizationEndpoint ?? `${origin}${options.issuerPath}/authorize`,
        token_endpoint: `${origin}${options.issuerPath}/token`,
        ...(options.registration !== false && { registration_endpoint: `${origin}${options.issuerPath}/register` }),
        response_types_supported: ["code"],
        code_challenge_methods_supported: options.s256 ? ["S256"] : ["plain"],
      });
    }
    if (pathname.endsWith("/register")) return Response.json({ client_id: "registered" }, { status: 201 });
    return new Response("not found", { status: 404 });
  });
  return { url: `${origin}/mcp`, requests, stop: () => t.network.remove(origin) };
}

async function connect(url: string) {
  const created = await t.api("POST", "/api/v1/connectors", { body: { url } });
  return t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
}

test("authorization server metadata is looked for in the MCP order: RFC 8414 path-inserted, OIDC path-inserted, OIDC path-appended", async () => {
  const server = metadataServer({ issuerPath: "/tenant1", servedAt: "/tenant1/.well-known/openid-configuration", s256: true });
  const res = await connect(server.url);
  expect(res.body.state).toBe("auth_required");
  expect(new URL(res.body.auth_request.authorization_url).pathname).toBe("/tenant1/authorize");
  const wellKnown = server.requests.filter((p) => p.includes("well-known") && !p.includes("protected-resource"));
  expect(wellKnown).toEqual([
    "/.well-known/oauth-authorization-server/tenant1",
    "/.well-known/openid-configuration/tenant1",
    "/tenant1/.well-known/openid-configuration",
  ]);
  server.stop();
});

test("an authorization server that does not advertise PKCE S256 is refused, and the reason says so", async () => {
  const server = metadataServer({ issuerPath: "", servedAt: "/.well-known/oauth-authorization-server", s256: false });
  const res = await connect(server.url);
  expectProblem(res, 502);
  expect(res.body.type).toBe("/problems/oauth-discovery-failed");
  expect(res.body.detail).toContain("PKCE S256");
  expect(server.requests).not.toContain("/register");
  server.stop();
});

test("no way to get a client identity (no registration, no CIMD, no client_id): a 422 asking for a client_id", async () => {
  const server = metadataServer({
    issuerPath: "",
    servedAt: "/.well-known/oauth-authorization-server",
    s256: true,
    registration: false,
  });
  const res = await connect(server.url);
  expectProblem(res, 422);
  expect(res.body.type).toBe("/problems/oauth-client-required");
  expect(res.body.errors[0].field).toBe("client_id");
  expect(res.body.detail).toContain("Dynamic Client Registration");
  server.stop();
});

test("an authorization endpoint that is not https (javascript:, data:, plain http elsewhere, with a fragment or credentials): connect fails saying so, and nothing reaches a client", async () => {
  for (const endpoint of [
    "javascript:alert(document.domain)//",
    "data:text/html,<script>alert(1)</script>",
    "http://as.example/authorize",
    "https://as.example/authorize#x",
    "https://user:pw@as.example/authorize",
    "not a url",
  ]) {
    const server = metadataServer({
      issuerPath: "",
      servedAt: "/.well-known/oauth-authorization-server",
      s256: true,
      authorizationEndpoint: endpoint,
    });
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: server.url } });
    const res = await t.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    expect(res.body.detail).toContain("authorization_endpoint");
    expect(res.text).not.toContain("alert");
    const listed = await t.api("GET", "/api/v1/connectors?limit=100");
    expect(listed.status).toBe(200);
    const mine = listed.body.items.find((c: { id: string }) => c.id === created.body.id);
    expect(mine).toMatchObject({ state: "disconnected", auth_request: null });
    server.stop();
  }
});
