import * as oauth from "oauth4webapi";
import { assertSecureUrl, type OAuthHttp } from "./http";

export class DiscoveryFailed extends Error {}

/** The canonical MCP server URL, used as the RFC 8707 resource ([MCP 2025-11-25 authorization §"Canonical Server URI"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#canonical-server-uri)). */
export function canonicalResource(serverUrl: URL): string {
  const url = new URL(serverUrl.href);
  url.hash = "";
  const href = url.href;
  return url.pathname === "/" && !url.search ? href.slice(0, -1) : href;
}

export type ResourceDiscovery = {
  authorizationServer: URL;
  scopesSupported: string[];
  /** True for a server without RFC 9728 metadata, authorized the MCP 2025-03-26 way (its origin is the server). */
  legacy: boolean;
};

/** [RFC 9728 §3.1](https://www.rfc-editor.org/rfc/rfc9728#section-3.1): the well-known URL inserted between host and path. */
const wellKnown = (base: URL, name: string, path: string) =>
  new URL(`/.well-known/${name}${path === "/" ? "" : path}`, base.origin);

/**
 * [MCP authorization (2025-11-25) §"Protected Resource Metadata Discovery Requirements"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements): the `resource_metadata` of the
 * 401's WWW-Authenticate if given, else the path-inserted well-known URL, then the root one ([RFC 9728 §3](https://www.rfc-editor.org/rfc/rfc9728#section-3)).
 */
export async function discoverResource(
  serverUrl: URL,
  metadataUrl: URL | undefined,
  http: OAuthHttp,
): Promise<ResourceDiscovery> {
  const candidates = metadataUrl
    ? [metadataUrl]
    : [
        wellKnown(serverUrl, "oauth-protected-resource", serverUrl.pathname),
        wellKnown(serverUrl, "oauth-protected-resource", "/"),
      ];
  const failures: string[] = [];
  for (const candidate of [...new Map(candidates.map((c) => [c.href, c])).values()]) {
    const response = await http.fetch(candidate, { headers: { accept: "application/json" } });
    if (!response.ok) {
      failures.push(`${candidate.href} answered ${response.status}`);
      continue;
    }
    const claimed = (await response
      .clone()
      .json()
      .catch(() => ({}))) as { resource?: unknown };
    // [RFC 9728 §3.3](https://www.rfc-editor.org/rfc/rfc9728#section-3.3) wants `resource` to equal the resource the metadata was looked up for. MCP servers often
    // name their origin or a parent path; accept a same-origin prefix of the server URL, as the MCP SDKs do.
    if (typeof claimed.resource !== "string" || !isResourceFor(claimed.resource, serverUrl)) {
      throw new DiscoveryFailed(
        `the protected resource metadata at ${candidate.href} is for ${String(claimed.resource)}, not ${canonicalResource(serverUrl)}`,
      );
    }
    const metadata = await oauth.processResourceDiscoveryResponse(new URL(claimed.resource), response);
    const server = metadata.authorization_servers?.[0];
    if (!server) throw new DiscoveryFailed(`the protected resource metadata at ${candidate.href} names no authorization server`);
    return { authorizationServer: new URL(server), scopesSupported: metadata.scopes_supported ?? [], legacy: false };
  }
  // [MCP 2025-03-26 §2.3.2](https://modelcontextprotocol.io/specification/2025-03-26/basic/authorization#authorization-base-url): servers from before RFC 9728 are their own authorization server, at their origin.
  if (!metadataUrl) return { authorizationServer: new URL(serverUrl.origin), scopesSupported: [], legacy: true };
  throw new DiscoveryFailed(`no protected resource metadata (RFC 9728): ${failures.join("; ")}`);
}

function isResourceFor(resource: string, serverUrl: URL): boolean {
  let claimed: URL;
  try {
    claimed = new URL(resource);
  } catch {
    return false;
  }
  if (claimed.origin !== serverUrl.origin) return false;
  const base = claimed.pathname.endsWith("/") ? claimed.pathname : `${claimed.pathname}/`;
  return claimed.pathname === "/" || serverUrl.pathname === claimed.pathname || serverUrl.pathname.startsWith(base);
}

const guessed = new WeakSet<oauth.AuthorizationServer>();
/**
 * Whether these are the default endpoints assumed for a server that publishes no OAuth metadata at all: its 401 may
 * not be OAuth's (an API key it wants in a header), so a failure there is worth a hint.
 */
export const isGuessedServer = (as: oauth.AuthorizationServer) => guessed.has(as);

/**
 * Authorization server metadata in the order of MCP authorization (2025-11-25) §"Authorization Server Metadata
 * Discovery": RFC 8414 path-inserted, OIDC path-inserted, OIDC path-appended; for an issuer without a path, the
 * RFC 8414 and OIDC root forms. oauth4webapi checks each answer (issuer must equal the one asked for, [RFC 8414 §3.3](https://www.rfc-editor.org/rfc/rfc8414#section-3.3)).
 */
export async function discoverAuthorizationServer(
  issuer: URL,
  http: OAuthHttp,
  legacy = false,
): Promise<oauth.AuthorizationServer> {
  const path = issuer.pathname.replace(/\/$/, "");
  const candidates = path
    ? [
        new URL(`/.well-known/oauth-authorization-server${path}`, issuer.origin),
        new URL(`/.well-known/openid-configuration${path}`, issuer.origin),
        new URL(`${path}/.well-known/openid-configuration`, issuer.origin),
      ]
    : [
        new URL("/.well-known/oauth-authorization-server", issuer.origin),
        new URL("/.well-known/openid-configuration", issuer.origin),
      ];
  const failures: string[] = [];
  for (const candidate of candidates) {
    const response = await http.fetch(candidate, { headers: { accept: "application/json" } });
    if (!response.ok) {
      failures.push(`${candidate.pathname} ${response.status}`);
      continue;
    }
    // [RFC 8414 §3.3](https://www.rfc-editor.org/rfc/rfc8414#section-3.3): the metadata's issuer must be the one asked for. A 2025-03-26 server publishes its metadata at
    // its own origin and may name a sub-path issuer there; it is its own authorization server, so that issuer stands.
    const claimed = legacy
      ? (
          (await response
            .clone()
            .json()
            .catch(() => ({}))) as { issuer?: unknown }
        ).issuer
      : undefined;
    const expected =
      typeof claimed === "string" && URL.canParse(claimed) && new URL(claimed).origin === issuer.origin
        ? new URL(claimed)
        : issuer;
    const as = await oauth.processDiscoveryResponse(expected, response);
    // [OAuth 2.1 §4.1.1](https://datatracker.ietf.org/doc/html/draft-ietf-oauth-v2-1-13#section-4.1.1) / MCP authorization: PKCE with S256 is required; a server that does not say so is refused.
    if (!as.code_challenge_methods_supported?.includes("S256")) {
      throw new DiscoveryFailed(
        `the authorization server ${as.issuer} does not advertise PKCE S256 (code_challenge_methods_supported), which MCP requires`,
      );
    }
    if (!as.authorization_endpoint || !as.token_endpoint) {
      throw new DiscoveryFailed(`the authorization server ${as.issuer} has no authorization or token endpoint`);
    }
    assertEndpoints(as, http);
    return as;
  }
  // [MCP 2025-03-26 §2.3.3](https://modelcontextprotocol.io/specification/2025-03-26/basic/authorization#fallbacks-for-servers-without-metadata-discovery): without metadata, the default endpoints at the server's origin (PKCE is mandatory there).
  if (legacy) {
    const defaults: oauth.AuthorizationServer = {
      issuer: issuer.origin,
      authorization_endpoint: `${issuer.origin}/authorize`,
      token_endpoint: `${issuer.origin}/token`,
      registration_endpoint: `${issuer.origin}/register`,
      code_challenge_methods_supported: ["S256"],
    };
    guessed.add(defaults);
    return defaults;
  }
  throw new DiscoveryFailed(`no authorization server metadata for ${issuer.href} (${failures.join(", ")})`);
}

/**
 * The endpoints a server names are checked when they are discovered, not only when used: the authorization endpoint
 * is never fetched by the service but handed to people and programs as `authorization_url`, so a `javascript:` or
 * plain-http one must stop here. https only (http on loopback as assertSecureUrl allows), no fragment
 * ([RFC 6749 §3.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.1)), no credentials in it.
 */
function assertEndpoints(as: oauth.AuthorizationServer, http: OAuthHttp): void {
  const endpoints = {
    authorization_endpoint: as.authorization_endpoint,
    token_endpoint: as.token_endpoint,
    registration_endpoint: as.registration_endpoint,
    revocation_endpoint: as.revocation_endpoint,
  };
  for (const [name, value] of Object.entries(endpoints)) {
    if (value === undefined) continue;
    // What the server sent is not repeated (it may be made to look like something else): only its scheme.
    const refuse = (why: string) => new DiscoveryFailed(`the authorization server ${as.issuer} names a ${name} that ${why}`);
    if (typeof value !== "string" || !URL.canParse(value)) throw refuse("is not a URL");
    const url = new URL(value);
    try {
      assertSecureUrl(url, http.blockPrivate);
    } catch {
      throw refuse(
        `is not https (${url.protocol.replace(/[^a-z0-9+.-:]/gi, "").slice(0, 20)}; plain http only on a loopback host)`,
      );
    }
    if (url.hash || url.username || url.password) throw refuse("has a fragment or credentials in it");
  }
}
