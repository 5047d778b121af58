import { Forbidden } from "../http-errors/errors";
import { problemResponse } from "../http-errors/problem";

/**
 * CORS ([Fetch standard §3.2](https://fetch.spec.whatwg.org/#http-cors-protocol)) for what browser-based MCP clients
 * call across origins: the proxy URLs, the OAuth metadata documents and the token, registration and revocation
 * endpoints. The REST API and the authorization page stay same-origin. The service's own policy decides: an upstream's
 * CORS headers are never relayed (forward/headers.ts).
 */

/** Response headers a browser client must be able to read: the MCP session, the 401 challenge, retry hints. */
const EXPOSED = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After, X-Request-Id";
/** How long a browser may reuse a preflight answer, in seconds. */
const MAX_AGE = "600";
/** A header list as browsers send it in Access-Control-Request-Headers: field names and commas only. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

export type Cors = {
  /** The answer to an OPTIONS request at a CORS-enabled path that allows `methods`. */
  preflight(request: Request, methods: string): Response;
  /** Adds the CORS headers to an actual response when the request came from an allowed origin. */
  decorate(request: Request, response: Response): Response;
};

/** `allowedOrigins`: origins (scheme://host[:port]) or "*" (any origin; no cookies are involved, so this is safe). */
export function createCors(allowedOrigins: readonly string[]): Cors {
  const any = allowedOrigins.includes("*");
  const allowed = new Set(allowedOrigins);
  /** The Access-Control-Allow-Origin value for this request, or undefined when its origin is not allowed. */
  const allowOrigin = (request: Request): string | undefined => {
    const origin = request.headers.get("origin");
    if (origin === null) return undefined;
    if (any) return "*";
    return allowed.has(origin) ? origin : undefined;
  };
  // With a list, the answer depends on the Origin header: caches must key on it.
  const vary = (headers: Headers) => {
    if (!any) headers.append("vary", "Origin");
  };
  return {
    preflight(request, methods) {
      const origin = allowOrigin(request);
      if (origin === undefined) {
        const why = request.headers.has("origin")
          ? "This origin is not allowed (CORS__ALLOWED_ORIGINS)"
          : "A CORS preflight needs an Origin header";
        return problemResponse(new Forbidden(why));
      }
      const headers = new Headers({
        "access-control-allow-origin": origin,
        "access-control-allow-methods": methods,
        "access-control-max-age": MAX_AGE,
      });
      // Any request header may be asked for: the relays forward only the protocol's own (proxy/headers.ts) anyway.
      const requested = request.headers.get("access-control-request-headers");
      if (requested && HEADER_LIST.test(requested)) headers.set("access-control-allow-headers", requested);
      vary(headers);
      return new Response(null, { status: 204, headers });
    },
    decorate(request, response) {
      const origin = allowOrigin(request);
      if (origin === undefined) return response;
      response.headers.set("access-control-allow-origin", origin);
      response.headers.set("access-control-expose-headers", EXPOSED);
      vary(response.headers);
      return response;
    },
  };
}
