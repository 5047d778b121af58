import { AppError } from "../http-errors/errors";
import { errorResponse } from "../http-errors/problem";
import type { Cors } from "../http/cors";
import { crossSiteRefusal } from "../http/cross-site";
import { mcpChallenge, protectedResourceMetadataUrl } from "../http/mcp-challenge";
import type { Logger } from "../observability/logger";
import type { RequestAuthenticator } from "../users/authenticate";
import type { ProxyService } from "./service";

export type ProxyEntryDeps = {
  proxy: ProxyService;
  /** Basic, API tokens, and the authorization server's access tokens. */
  authenticate: RequestAuthenticator;
  publicUrl: () => string;
  log: Logger;
  requestId: (request: Request) => string | undefined;
  /** Browser-based MCP clients call across origins (http/cors.ts). */
  cors: Cors;
};

const METHODS = "POST, GET, DELETE";

/** Where a connector's proxy URL publishes its protected resource metadata (http/mcp-challenge.ts). */
export const resourceMetadataUrl = (publicUrl: string, id: string) =>
  protectedResourceMetadataUrl(publicUrl, `/api/v1/connectors/${encodeURIComponent(id)}/mcp`);

/**
 * One MCP request at a connector's proxy URL, for Bun's native route and the Elysia routes alike: authenticated,
 * relayed, or answered with a problem. A 401 challenges for both ways in: a Bearer token from this service's
 * authorization server, named by the resource metadata URL ([RFC 9728 §5.1](https://www.rfc-editor.org/rfc/rfc9728#section-5.1), MCP authorization), and HTTP Basic.
 */
export function proxyEntry(deps: ProxyEntryDeps) {
  const challenge = (request: Request, response: Response, id: string, invalidToken = false) => {
    response.headers.set("www-authenticate", mcpChallenge(request, resourceMetadataUrl(deps.publicUrl(), id), { invalidToken }));
    return response;
  };
  // The public URL's origin, parsed again only when the URL changes (not on every request).
  let publicUrl = "";
  let publicOrigin = "";
  const originOf = (url: string) => {
    if (url !== publicUrl) [publicUrl, publicOrigin] = [url, new URL(url).origin];
    return publicOrigin;
  };
  const answer = async (request: Request, id: string): Promise<Response> => {
    try {
      const refusal = crossSiteRefusal(request, originOf(deps.publicUrl()), "cross-origin");
      if (refusal) throw refusal;
      const response = await deps.proxy.handle(await deps.authenticate(request), id, request);
      // An upstream's 401 relayed as it came (proxy/credential-check.ts) challenges for this service's credentials too:
      // the upstream's own challenge is about the connector's, which the service holds.
      return response.status === 401 ? challenge(request, response, id) : response;
    } catch (error) {
      const response = errorResponse(error, deps.log, deps.requestId(request));
      return response.status === 401
        ? challenge(request, response, id, error instanceof AppError && error.type === "invalid-token")
        : response;
    }
  };
  return {
    handle: async (request: Request, id: string) => {
      const response = await answer(request, id);
      deps.proxy.count(response.status);
      return deps.cors.decorate(request, response);
    },
    /** A CORS preflight: answered before any authentication (browsers send no credentials with it). */
    preflight: (request: Request) => deps.cors.preflight(request, METHODS),
  };
}
export type ProxyEntry = ReturnType<typeof proxyEntry>;
