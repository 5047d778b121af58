import { Elysia } from "elysia";
import { Forbidden, UnsupportedMediaType } from "../http-errors/errors";

/**
 * Requests a browser sends by itself, on behalf of a page of another site. What a browser adds on its own — cached
 * HTTP Basic credentials, the console's cookie — must never make such a request count as the person's. The rules,
 * in one place:
 * - the REST API and the service's own forms (sign-in, consent, the callback's confirmation) refuse every change
 *   (POST, PUT, PATCH, DELETE) that a browser says comes from another site, whatever credential it carries;
 * - the REST API's changes also want a JSON content type, body or not, unless the request proves it is same-origin:
 *   an HTML form cannot send one, and `fetch` cannot without a CORS preflight the API never grants;
 * - the relays (MCP proxy, A2A) and the OAuth endpoints browser-based MCP clients call across origins (CORS) take
 *   a cross-site change only with a credential the page itself holds (a Bearer token), never with HTTP Basic, which
 *   a browser may have cached and sends by itself.
 * A browser says where a request comes from with Fetch Metadata (`Sec-Fetch-Site`, [Fetch Metadata §2.1](https://www.w3.org/TR/fetch-metadata/#sec-fetch-site-header))
 * and `Origin` ([RFC 6454 §7](https://www.rfc-editor.org/rfc/rfc6454#section-7)); a program sends neither and is not a browser's ambient request.
 */
export type RouteKind = "api" | "form" | "cross-origin";

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** What kind of route a path is, for the rules above. */
export function routeKind(pathname: string): RouteKind {
  if (/^\/api\/v1\/(?:connectors|virtual-servers)\/[^/]+\/mcp$/.test(pathname) || /^\/api\/v1\/a2a\/[^/]+$/.test(pathname))
    return "cross-origin";
  if (/^\/oauth\/(?:token|register|revoke)$/.test(pathname)) return "cross-origin";
  if (pathname === "/oauth/authorize" || pathname === "/api/v1/connectors/oauth/callback") return "form";
  return "api";
}

/** The origin a request was sent to (scheme, Host): a page served by this service at whatever name the browser used. */
export const ownOriginOf = (request: Request) => {
  const url = new URL(request.url);
  const host = request.headers.get("host");
  return `${url.protocol}//${host ?? url.host}`;
};

/** Whether a browser says the request comes from a page of another site (another port of the same host included). */
export function fromAnotherSite(request: Request, publicOrigin: string): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site === "cross-site" || site === "same-site") return true;
  if (site === "same-origin" || site === "none") return false;
  const origin = request.headers.get("origin");
  return origin !== null && origin !== publicOrigin && origin !== ownOriginOf(request);
}

/** Whether the request proves it comes from a page of this service itself. */
function provenSameOrigin(request: Request, publicOrigin: string): boolean {
  if (request.headers.get("sec-fetch-site") === "same-origin") return true;
  const origin = request.headers.get("origin");
  return origin !== null && (origin === publicOrigin || origin === ownOriginOf(request));
}

/** The refusal a request gets under the rules above, before its credentials or body are read; undefined: go on. */
export function crossSiteRefusal(request: Request, publicOrigin: string, known?: RouteKind): Error | undefined {
  if (!UNSAFE.has(request.method)) return undefined;
  const kind = known ?? routeKind(new URL(request.url).pathname);
  const foreign = fromAnotherSite(request, publicOrigin);
  if (kind === "cross-origin") {
    const basic = /^basic\s/i.test(request.headers.get("authorization") ?? "");
    return foreign && basic
      ? new Forbidden(
          "A request from another site may not use HTTP Basic credentials (a browser sends those by itself): send a Bearer token",
        )
      : undefined;
  }
  if (foreign) {
    const from = request.headers.get("origin")?.slice(0, 200) ?? "another site";
    return new Forbidden(
      `A change from a page of ${from} is refused, whatever its credentials: make it from this service's own pages, or from a program`,
    );
  }
  if (
    kind === "api" &&
    WITH_BODY.has(request.method) &&
    !provenSameOrigin(request, publicOrigin) &&
    !JSON_TYPE.test(request.headers.get("content-type") ?? "")
  ) {
    return new UnsupportedMediaType(
      `${request.method} here needs Content-Type: application/json, even without a body (an HTML form cannot send it)`,
    );
  }
  return undefined;
}

/**
 * Whether a request comes from a browser (it sends Fetch Metadata on every request). A 401 to a browser never
 * challenges for HTTP Basic: the browser would ask the person, then cache what they typed and send it by itself to
 * every later request of any page (ambient credentials). Programs still get the Basic challenge.
 */
export const fromBrowser = (request: Request) => request.headers.has("sec-fetch-mode");

/** The rules above for every route of the app, before routing (so before any credential or body is read). */
export function crossSitePlugin(publicUrl: () => string) {
  // onRequest hooks of a plugin apply to every route of the app that uses it (they run before routing).
  return new Elysia({ name: "cross-site" }).onRequest(({ request }) => {
    const refusal = crossSiteRefusal(request, new URL(publicUrl()).origin);
    if (refusal) throw refusal;
  });
}
