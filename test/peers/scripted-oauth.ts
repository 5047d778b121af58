import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { createHash, randomUUID } from "node:crypto";

/**
 * For the fast OAuth tests: an authorization server and the MCP server it protects, as in-process handlers for
 * the fake network, scripted the way oauth4webapi's own tests intercept the token endpoint. The end-to-end
 * tests run the same flows against oidc-provider (test/peers/oidc.ts). What it checks is what a careful server
 * checks: PKCE S256 (RFC 7636 §4.6), single-use codes bound to client and redirect URI, the RFC 8707 resource,
 * and access tokens at the MCP server; what it answers is what RFC 6749 §5.1 and RFC 8414 describe.
 */
export function scriptedOAuth(options: { as?: string; mcp?: string } = {}) {
  const as = options.as ?? "https://as.example";
  const mcp = options.mcp ?? "https://mcp.example";
  const resource = `${mcp}/mcp`;
  const codes = new Map<
    string,
    { challenge: string; redirectUri: string; clientId: string; resource: string | null; scope: string }
  >();
  const accessTokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const seen = { tokenRequests: [] as URLSearchParams[], revoked: [] as string[], mcpAuthorizations: [] as string[] };
  const state = { issuerInRedirect: as, tokenError: undefined as string | undefined };

  const issue = (scope: string) => {
    const access = `at-${randomUUID()}`;
    const refresh = `rt-${randomUUID()}`;
    accessTokens.add(access);
    refreshTokens.add(refresh);
    return Response.json(
      { access_token: access, token_type: "Bearer", expires_in: 3600, refresh_token: refresh, scope },
      { headers: { "cache-control": "no-store" } },
    );
  };
  const oauthError = (error: string, description: string) =>
    Response.json({ error, error_description: description }, { status: 400 });

  async function authorizationServer(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/.well-known/oauth-authorization-server") {
      return Response.json({
        issuer: as,
        authorization_endpoint: `${as}/authorize`,
        token_endpoint: `${as}/token`,
        registration_endpoint: `${as}/register`,
        revocation_endpoint: `${as}/revoke`,
        response_types_supported: ["code"],
        code_challenge_methods_supported: ["S256"],
        scopes_supported: ["mcp:tools", "offline_access"],
        authorization_response_iss_parameter_supported: true,
      });
    }
    if (pathname === "/register" && request.method === "POST") {
      const metadata = (await request.json()) as Record<string, unknown>;
      return Response.json({ ...metadata, client_id: `client-${randomUUID()}` }, { status: 201 });
    }
    if (pathname === "/token" && request.method === "POST") {
      const form = new URLSearchParams(await request.text());
      seen.tokenRequests.push(form);
      if (state.tokenError) return oauthError(state.tokenError, "scripted refusal");
      if (form.get("grant_type") === "authorization_code") {
        const code = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        if (!code) return oauthError("invalid_grant", "unknown or used code");
        const verifier = form.get("code_verifier") ?? "";
        if (createHash("sha256").update(verifier).digest("base64url") !== code.challenge)
          return oauthError("invalid_grant", "PKCE verification failed");
        if (form.get("redirect_uri") !== code.redirectUri || form.get("client_id") !== code.clientId)
          return oauthError("invalid_grant", "not this client's code");
        if (form.get("resource") !== code.resource)
          return oauthError("invalid_target", "resource differs from the authorization request's");
        return issue(code.scope);
      }
      if (form.get("grant_type") === "refresh_token") {
        const old = form.get("refresh_token") ?? "";
        if (!refreshTokens.delete(old)) return oauthError("invalid_grant", "unknown or used refresh token");
        return issue("mcp:tools");
      }
      return oauthError("unsupported_grant_type", "only code and refresh");
    }
    if (pathname === "/revoke" && request.method === "POST") {
      const token = new URLSearchParams(await request.text()).get("token") ?? "";
      seen.revoked.push(token);
      accessTokens.delete(token);
      refreshTokens.delete(token);
      return new Response(null, { status: 200 });
    }
    return new Response("not found", { status: 404 });
  }

  async function mcpServer(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/.well-known/oauth-protected-resource/mcp")
      return Response.json({ resource, authorization_servers: [as], scopes_supported: ["mcp:tools"] });
    if (pathname !== "/mcp") return new Response("not found", { status: 404 });
    const token = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
    if (!token || !accessTokens.has(token)) {
      return new Response(null, {
        status: 401,
        headers: {
          "www-authenticate": `Bearer resource_metadata="${mcp}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`,
        },
      });
    }
    seen.mcpAuthorizations.push(token);
    const server = new McpServer({ name: "scripted-oauth-server", version: "1.0.0" });
    server.registerTool("whoami", { description: "The token this request carried" }, async () => ({
      content: [{ type: "text", text: token }],
    }));
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    return transport.handleRequest(request);
  }

  return {
    as,
    mcp,
    resource,
    seen,
    state,
    authorizationServer,
    mcpServer,
    /** The user approves the authorization request: the URL the browser is sent back to (code, state, iss). */
    approve(authorizationUrl: string): string {
      const request = new URL(authorizationUrl).searchParams;
      const code = `code-${randomUUID()}`;
      codes.set(code, {
        challenge: request.get("code_challenge") ?? "",
        redirectUri: request.get("redirect_uri") ?? "",
        clientId: request.get("client_id") ?? "",
        resource: request.get("resource"),
        scope: request.get("scope") ?? "",
      });
      const back = new URL(request.get("redirect_uri")!);
      back.search = new URLSearchParams({ code, state: request.get("state") ?? "", iss: state.issuerInRedirect }).toString();
      return back.href;
    },
    /** The user refuses: the error redirect of RFC 6749 §4.1.2.1. */
    deny(authorizationUrl: string): string {
      const request = new URL(authorizationUrl).searchParams;
      const back = new URL(request.get("redirect_uri")!);
      back.search = new URLSearchParams({
        error: "access_denied",
        error_description: "The user said no",
        state: request.get("state") ?? "",
        iss: as,
      }).toString();
      return back.href;
    },
    /** Every token issued so far stops working at the MCP server (refresh tokens still work). */
    expireAccessTokens(): void {
      accessTokens.clear();
    },
  };
}
export type ScriptedOAuth = ReturnType<typeof scriptedOAuth>;
