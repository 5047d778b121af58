import { Elysia, t } from "elysia";
import type { Cors } from "../http/cors";
import { Problem } from "../http-errors/model";
import type { AuthPlugin } from "../users/auth-plugin";
import { authorizationRoutes } from "./endpoints/authorization";
import type { AuthServerRouteDeps } from "./endpoints/deps";
import { discoveryRoutes } from "./endpoints/discovery";
import { grantRoutes } from "./endpoints/grants";
import { registrationRoutes } from "./endpoints/registration";
import { revocationRoutes } from "./endpoints/revocation";
import { tokenRoutes } from "./endpoints/token";
import { OAUTH_PATHS } from "./model";
import { jsonEndpoint } from "./responses";

/** The paths browser-based clients call across origins, and their methods (the authorization endpoint is a page: not one). */
const CROSS_ORIGIN: Record<string, string> = {
  "/.well-known/oauth-authorization-server": "GET",
  "/.well-known/oauth-protected-resource": "GET",
  "/.well-known/oauth-protected-resource/api/v1/connectors/:id/mcp": "GET",
  "/.well-known/oauth-protected-resource/api/v1/virtual-servers/:id/mcp": "GET",
  [OAUTH_PATHS.register]: "POST",
  [OAUTH_PATHS.token]: "POST",
  [OAUTH_PATHS.revoke]: "POST",
};

function preflightRoutes(cors: Cors) {
  const preflights = new Elysia({ detail: { tags: ["Authorization server"] } });
  for (const [path, methods] of Object.entries(CROSS_ORIGIN)) {
    preflights.options(path, ({ request }) => cors.preflight(request, methods), {
      response: { 204: t.Void({ description: "Allowed: the CORS headers say for how long" }), 403: Problem },
      detail: {
        summary: `CORS preflight of ${path}`,
        description: "For browser-based MCP clients; allowed origins are CORS__ALLOWED_ORIGINS.",
        security: [],
      },
    });
  }
  return preflights;
}

/**
 * The authorization server's endpoints and discovery documents, and the grants API: one handler per endpoint, in
 * endpoints/. The JSON endpoints answer OAuth errors as JSON (responses.ts), the pages as HTML (pages.ts).
 */
export function authServerRoutes(deps: AuthServerRouteDeps, auth: AuthPlugin) {
  const endpoints = { ...deps, json: jsonEndpoint(deps.cors) };
  return new Elysia()
    .use(preflightRoutes(deps.cors))
    .use(discoveryRoutes(endpoints))
    .use(registrationRoutes(endpoints))
    .use(authorizationRoutes(endpoints))
    .use(tokenRoutes(endpoints))
    .use(revocationRoutes(endpoints))
    .use(grantRoutes(deps.server, auth));
}
