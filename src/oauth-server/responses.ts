import type { Cors } from "../http/cors";
import { OAuthError } from "./errors";

/** A JSON answer of the authorization server: never cached ([RFC 6749 §5.1](https://www.rfc-editor.org/rfc/rfc6749#section-5.1)), never sniffed. */
export const oauthJson = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      pragma: "no-cache",
      "x-content-type-options": "nosniff",
      ...headers,
    },
  });

/** The one rendering of the JSON endpoints' errors ([RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2), [RFC 7591 §3.2.2](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.2), [RFC 7009 §2.2.1](https://www.rfc-editor.org/rfc/rfc7009#section-2.2.1)). */
export const oauthErrorResponse = (error: OAuthError) => oauthJson(error.toResponseObject(), error.status, error.headers);

/**
 * A JSON endpoint's handler, for browser-based MCP clients too: its answers carry the CORS headers, its OAuth errors
 * become their JSON answers here. Anything else thrown is the service's own failure, answered by the problem plugin.
 */
export const jsonEndpoint =
  (cors: Cors) =>
  <C extends { request: Request }>(handler: (context: C) => Response | Promise<Response>) =>
  async (context: C): Promise<Response> => {
    let response: Response;
    try {
      response = await handler(context);
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      response = oauthErrorResponse(e);
    }
    return cors.decorate(context.request, response);
  };
