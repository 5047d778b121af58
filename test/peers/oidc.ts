import { createServer, type Server } from "node:http";
import Provider from "oidc-provider";
import { freePort } from "./ports";

export type OidcPeer = {
  issuer: string;
  provider: Provider;
  destroyed: { refreshTokens: number; grants: number };
  /** Successful refresh_token grants at the token endpoint. */
  refreshed: { count: number };
  /** Token requests wait this long first (0: none). */
  slowTokenEndpoint(ms: number): void;
  stop(): Promise<void>;
  /** Listens again on the same port after `stop`, with everything it knew (an outage, not a reset). */
  restart(): Promise<void>;
};

export type OidcOptions = {
  /** Access token lifetime in seconds (short, so the scheduler's refresh shows in a test). */
  accessTokenTtl?: number;
  scopes?: string[];
};

/**
 * oidc-provider (panva), a certified OpenID Provider, as the real authorization server: Dynamic Client
 * Registration, RFC 8707 resource indicators with JWT access tokens whose `aud` is the resource, refresh
 * token rotation, revocation, and its development login and consent forms (driven by the tests).
 */
export async function startOidcProvider(options: OidcOptions = {}): Promise<OidcPeer> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const scopes = options.scopes ?? ["openid", "offline_access", "mcp:tools", "mcp:admin"];
  const provider = new Provider(issuer, {
    clients: [],
    scopes,
    features: {
      registration: { enabled: true },
      revocation: { enabled: true },
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: scopes.filter((s) => s.startsWith("mcp:")).join(" "),
          audience: resource,
          accessTokenTTL: options.accessTokenTtl ?? 3600,
          accessTokenFormat: "jwt",
        }),
      },
    },
    // Refresh tokens for every client allowed the grant (not only with offline_access), rotated on use.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    rotateRefreshToken: true,
    ttl: { AccessToken: options.accessTokenTtl ?? 3600, RefreshToken: 86_400, Grant: 86_400, Session: 86_400, Interaction: 600 },
    clientBasedCORS: () => true,
  });
  // The loopback issuer is plain http: allow it (and http redirect URIs on loopback) as a development provider does.
  provider.proxy = false;
  provider.on("server_error", (_ctx: unknown, err: Error) => console.error("oidc-provider server_error:", err));
  const destroyed = { refreshTokens: 0, grants: 0 };
  provider.on("refresh_token.destroyed", () => void destroyed.refreshTokens++);
  provider.on("grant.destroyed", () => void destroyed.grants++);
  const refreshed = { count: 0 };
  provider.on("grant.success", (ctx: { oidc: { params?: { grant_type?: unknown } } }) => {
    if (ctx.oidc.params?.grant_type === "refresh_token") refreshed.count++;
  });
  // A token endpoint that can be made slow: a request whose client went away meanwhile is dropped unprocessed (as
  // one lost on the way would be), so a client killed mid-refresh leaves the grant as it was.
  const slow = { ms: 0 };
  const handle = provider.callback();
  const server: Server = createServer(async (req, res) => {
    if (slow.ms && req.url?.startsWith("/token")) {
      await Bun.sleep(slow.ms);
      if (req.socket.destroyed) return;
    }
    handle(req, res);
  });
  const listen = () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  await listen();
  return {
    issuer,
    provider,
    destroyed,
    refreshed,
    slowTokenEndpoint: (ms) => void (slow.ms = ms),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    restart: listen,
  };
}

/**
 * A browser, as far as the authorization code flow needs one: follows redirects with a cookie jar and
 * submits oidc-provider's login and consent forms. Returns the URL the provider finally redirected to
 * outside itself (the service's callback), without following it.
 */
export async function authorizeInBrowser(
  authorizationUrl: string,
  issuer: string,
  options: { deny?: boolean } = {},
): Promise<string> {
  const cookies = new Map<string, string>();
  const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const remember = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair!.indexOf("=");
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  };
  let url = authorizationUrl;
  let method = "GET";
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (!url.startsWith(issuer)) return url;
    const response = await fetch(url, {
      method,
      body,
      redirect: "manual",
      headers: { cookie: jar(), ...(body && { "content-type": "application/x-www-form-urlencoded" }) },
    });
    remember(response);
    const location = response.headers.get("location");
    if (location) {
      url = new URL(location, url).href;
      method = "GET";
      body = undefined;
      continue;
    }
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form at ${url} (${response.status}): ${html.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const [tag] of html.matchAll(/<input\b[^>]*>/g)) {
      const name = /\bname="([^"]*)"/.exec(tag)?.[1];
      if (name) fields.set(name, /\bvalue="([^"]*)"/.exec(tag)?.[1] ?? "");
    }
    if (fields.has("login")) {
      fields.set("login", "alice@example.com");
      fields.set("password", "any password");
    }
    if (options.deny && fields.get("prompt") === "consent") {
      // The consent page's "Cancel": GET /interaction/:uid/abort, answered with access_denied.
      url = new URL(`${new URL(action, url).pathname.replace(/\/$/, "")}/abort`, url).href;
      method = "GET";
      body = undefined;
      continue;
    }
    url = new URL(action, url).href;
    method = "POST";
    body = fields;
  }
  throw new Error("too many redirects in the authorization flow");
}
