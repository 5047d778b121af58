import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { z } from "zod";

export type OAuthMcpServer = {
  url: string;
  resourceMetadataUrl: string;
  accepted: JWTPayload[];
  /** How many requests were refused with 401 for a token it no longer accepts. */
  rejected: { count: number };
  /** From now on, refuse every token seen so far (as a server does after rotating its keys); newer ones pass. */
  rejectTokensSeenSoFar(): void;
  stop(): Promise<void>;
};

/**
 * An MCP server protected by OAuth as MCP authorization (2025-11-25) describes: RFC 9728 metadata naming the
 * authorization server, 401 with `WWW-Authenticate: Bearer resource_metadata=…, scope=…`, and JWT access
 * tokens checked for issuer, signature and `aud` = this server (RFC 8707). The tool `admin-report` needs the
 * extra scope `mcp:admin` and answers 403 insufficient_scope (RFC 6750 §3.1) without it.
 */
export function startOAuthMcpServer(issuer: string): OAuthMcpServer {
  const accepted: JWTPayload[] = [];
  const refused = new Set<string>();
  const rejected = { count: 0 };
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  let resource = "";
  let metadataUrl = "";
  const challenge = (status: number, extra = "") =>
    new Response(null, {
      status,
      headers: { "www-authenticate": `Bearer resource_metadata="${metadataUrl}", scope="mcp:tools"${extra}` },
    });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/.well-known/oauth-protected-resource/mcp") {
        return Response.json({
          resource,
          authorization_servers: [issuer],
          scopes_supported: ["mcp:tools"],
          bearer_methods_supported: ["header"],
        });
      }
      if (path !== "/mcp") return new Response("not found", { status: 404 });
      const token = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
      if (!token) return challenge(401);
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jwtVerify(token, jwks, { issuer, audience: resource }));
      } catch {
        return challenge(401, ', error="invalid_token"');
      }
      if (refused.has(String(claims.jti))) {
        rejected.count++;
        return challenge(401, ', error="invalid_token"');
      }
      const scopes = String(claims.scope ?? "").split(" ");
      const body =
        request.method === "POST"
          ? await request
              .clone()
              .json()
              .catch(() => null)
          : null;
      if (body?.method === "tools/call" && body.params?.name === "admin-report" && !scopes.includes("mcp:admin")) {
        return new Response(null, {
          status: 403,
          headers: {
            "www-authenticate": `Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="${metadataUrl}"`,
          },
        });
      }
      accepted.push(claims);
      const mcp = new McpServer({ name: "oauth-test-server", version: "1.0.0" });
      mcp.registerTool(
        "whoami",
        { description: "Who the token says the caller is", inputSchema: { note: z.string().optional() } },
        async () => ({
          content: [
            { type: "text", text: JSON.stringify({ sub: claims.sub, aud: claims.aud, scope: claims.scope, jti: claims.jti }) },
          ],
        }),
      );
      mcp.registerTool("admin-report", { description: "Needs mcp:admin", inputSchema: {} }, async () => ({
        content: [{ type: "text", text: "admin ok" }],
      }));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      return transport.handleRequest(request);
    },
  });
  resource = `http://127.0.0.1:${server.port}/mcp`;
  metadataUrl = `http://127.0.0.1:${server.port}/.well-known/oauth-protected-resource/mcp`;
  return {
    url: resource,
    resourceMetadataUrl: metadataUrl,
    accepted,
    rejected,
    rejectTokensSeenSoFar: () => {
      for (const claims of accepted) refused.add(String(claims.jti));
    },
    stop: () => server.stop(true),
  };
}
