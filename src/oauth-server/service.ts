import { createHash, randomBytes } from "node:crypto";
import type { ConnectorRow } from "../connectors/repository";
import type { Job } from "../scheduler/scheduler";
import type { Principal } from "../users/model";
import { ClientRefused, type Clients } from "./clients";
import {
  ACCESS_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_MS,
  CODE_TTL_MS,
  OAUTH_PATHS,
  REFRESH_TOKEN_PREFIX,
  REFRESH_TOKEN_TTL_MS,
  MAX_PARAMETER_LENGTH,
  MAX_PENDING_REQUESTS_PER_USER,
  REQUEST_TTL_MS,
  type AuthorizationParams,
} from "./model";
import { grantedScope, SCOPES_SUPPORTED } from "./scope";
import type { AuthServerRepository, ClientRow, GrantRow } from "./repository";
import { sha256Hex } from "../secrets/digest";

const digest = sha256Hex;
const secret = (prefix = "") => `${prefix}${randomBytes(32).toString("base64url")}`;
/** [RFC 7636 §4.1](https://www.rfc-editor.org/rfc/rfc7636#section-4.1): 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** An OAuth error as the protocol names it ([RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1), [§5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2)). */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

/**
 * An authorization request answered with a page for the person, never a redirect: before the person has signed in
 * and answered the consent page, nothing may send the browser to a client's redirect URI. An unknown client or a
 * redirect URI it did not register is never redirected to ([RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1)); nor is a registered one, since anyone
 * can register one of their own: the server would be an open redirector ([RFC 9700 §4.11.2](https://www.rfc-editor.org/rfc/rfc9700#section-4.11.2): authenticate the
 * user first, redirect only to a URI it trusts).
 */
export class NoRedirect extends Error {}

export type AuthServerDeps = {
  repository: AuthServerRepository;
  clients: Clients;
  clock: () => number;
  newId: () => string;
  publicUrl: () => string;
  /** The connector a resource names, whoever owns it. */
  connector(id: string): Promise<ConnectorRow | undefined>;
  /** A user as a principal (the one who signed in on a request's page). */
  user(id: string): Promise<Principal | undefined>;
};

export type Redirect = { location: string };
export type TokenResponse = {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
};
/** An authorization request checked at the authorization endpoint, with its client: what the person's pages show. */
export type CheckedRequest = { client: ClientRow; params: AuthorizationParams };

/**
 * The service as an OAuth 2.1 authorization server for its own MCP proxy URLs ([MCP authorization 2025-11-25](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization)):
 * the authorization code flow with PKCE S256 only, RFC 8707 resources (one connector's proxy URL), rotated refresh
 * tokens, RFC 7009 revocation. The person signs in with their account of this service and consents.
 */
export function createAuthServer(deps: AuthServerDeps) {
  const { repository, clients, clock } = deps;
  const issuer = () => deps.publicUrl();
  const proxyPrefix = () => `${issuer()}/api/v1/connectors/`;

  /** The connector id a resource names: `{public URL}/api/v1/connectors/{id}/mcp` ([RFC 8707 §2](https://www.rfc-editor.org/rfc/rfc8707#section-2): absolute, no fragment). */
  function connectorOfResource(resource: string | null): string {
    if (!resource) throw new OAuthError("invalid_target", "resource is required: the MCP proxy URL of the connector (RFC 8707)");
    const prefix = proxyPrefix();
    const match = resource.startsWith(prefix) ? /^([^/?#]+)\/mcp\/?$/.exec(resource.slice(prefix.length)) : null;
    if (!match)
      throw new OAuthError(
        "invalid_target",
        `resource must be the MCP proxy URL of a connector of this service (${prefix}{id}/mcp)`,
      );
    return match[1]!;
  }

  const resourceOf = (connectorId: string) => `${proxyPrefix()}${connectorId}/mcp`;

  /** [RFC 6749 §4.1.2](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2) and [RFC 9207](https://www.rfc-editor.org/rfc/rfc9207#section-2): the answer to the client, with `iss`. */
  function redirect(params: Pick<AuthorizationParams, "redirect_uri" | "state">, answer: Record<string, string>): Redirect {
    const url = new URL(params.redirect_uri);
    for (const [key, value] of Object.entries(answer)) url.searchParams.set(key, value);
    if (params.state !== null) url.searchParams.set("state", params.state);
    url.searchParams.set("iss", issuer());
    return { location: url.href };
  }

  async function issueTokens(grant: GrantRow): Promise<TokenResponse> {
    const now = clock();
    const access = secret(ACCESS_TOKEN_PREFIX);
    const refresh = secret(REFRESH_TOKEN_PREFIX);
    const base = { grant_id: grant.id, code_challenge: null, redirect_uri: null, used_at: null, created_at: now };
    await repository.insertToken({ ...base, digest: digest(access), kind: "access", expires_at: now + ACCESS_TOKEN_TTL_MS });
    await repository.insertToken({ ...base, digest: digest(refresh), kind: "refresh", expires_at: now + REFRESH_TOKEN_TTL_MS });
    await repository.touchGrant(grant.id, now);
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: Math.floor(ACCESS_TOKEN_TTL_MS / 1000),
      refresh_token: refresh,
      // RFC 6749 §5.1: what was granted, which may differ from what the client asked for.
      scope: grantedScope(grant.scope),
    };
  }

  /** The client of a token request: public, so it names itself ([RFC 6749 §3.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.2.1)). */
  async function tokenClient(clientId: string | null): Promise<ClientRow> {
    if (!clientId) throw new OAuthError("invalid_request", "client_id is required (public clients identify themselves)");
    try {
      return await clients.find(clientId, { knownOnly: true });
    } catch (e) {
      if (e instanceof ClientRefused) throw new OAuthError("invalid_client", e.message, 401);
      throw e;
    }
  }

  return {
    issuer,
    resourceOf,

    /** [RFC 8414 §2](https://www.rfc-editor.org/rfc/rfc8414#section-2): what MCP clients read to find the endpoints. */
    metadata() {
      const base = issuer();
      return {
        issuer: base,
        authorization_endpoint: `${base}${OAUTH_PATHS.authorize}`,
        token_endpoint: `${base}${OAUTH_PATHS.token}`,
        registration_endpoint: `${base}${OAUTH_PATHS.register}`,
        revocation_endpoint: `${base}${OAUTH_PATHS.revoke}`,
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
        scopes_supported: SCOPES_SUPPORTED,
      };
    },

    /** [RFC 9728 §2](https://www.rfc-editor.org/rfc/rfc9728#section-2): a connector's proxy URL as a protected resource. */
    resourceMetadata(connectorId: string) {
      return {
        resource: resourceOf(connectorId),
        authorization_servers: [issuer()],
        bearer_methods_supported: ["header"],
        scopes_supported: SCOPES_SUPPORTED,
        resource_name: "An MCP server through connector-service",
      };
    },

    /**
     * The authorization endpoint ([RFC 6749 §4.1.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.1), OAuth 2.1 §4.1.1): checks the request, and keeps nothing —
     * a request is kept only once a person signed in for it (`signedIn`). Anything wrong is a NoRedirect, a page for
     * the person; nothing goes back to the client before the person answered.
     */
    async begin(query: URLSearchParams): Promise<CheckedRequest> {
      const refuse = (error: string, description: string) =>
        new NoRedirect(`The application's request cannot be answered (${error}): ${description}.`);
      for (const key of new Set(query.keys())) {
        // [RFC 6749 §3.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.1): parameters are sent once.
        if (query.getAll(key).length > 1) throw refuse("invalid_request", `${key} is repeated`);
        if (query.get(key)!.length > MAX_PARAMETER_LENGTH)
          throw refuse("invalid_request", `${key} is longer than ${MAX_PARAMETER_LENGTH} characters`);
      }
      const clientId = query.get("client_id");
      if (!clientId) throw new NoRedirect("The request names no client (client_id is missing).");
      let client: ClientRow;
      try {
        client = await clients.find(clientId);
      } catch (e) {
        if (e instanceof ClientRefused) throw new NoRedirect(`This client cannot sign in here: ${e.message}.`);
        throw e;
      }
      const redirectUri = query.get("redirect_uri");
      // OAuth 2.1 §4.1.1: the redirect URI is compared to the registered ones as strings, exactly.
      if (!redirectUri || !client.metadata.redirect_uris.includes(redirectUri)) {
        throw new NoRedirect(
          "The request's redirect_uri is not one the client registered, so the answer cannot be sent back to it.",
        );
      }
      if (query.get("response_type") !== "code")
        throw refuse("unsupported_response_type", "only the authorization code flow (response_type=code) is offered");
      const challenge = query.get("code_challenge");
      if (query.get("code_challenge_method") !== "S256" || !challenge || !CHALLENGE.test(challenge)) {
        throw refuse("invalid_request", "PKCE is required: code_challenge (43 characters) with code_challenge_method=S256");
      }
      let connectorId: string;
      try {
        connectorId = connectorOfResource(query.get("resource"));
      } catch (e) {
        throw refuse((e as OAuthError).error, (e as OAuthError).description);
      }
      return {
        client,
        params: {
          client_id: client.client_id,
          redirect_uri: redirectUri,
          state: query.get("state"),
          code_challenge: challenge,
          connector_id: connectorId,
          scope: grantedScope(query.get("scope")),
        },
      };
    },

    /**
     * A person signed in for a checked request: it is kept (their oldest go beyond MAX_PENDING_REQUESTS_PER_USER),
     * and consent is theirs to give on the page the answered handle names.
     */
    async signedIn({ client, params }: CheckedRequest, userId: string) {
      await clients.remember(client);
      const handle = secret();
      await repository.saveRequest(
        { handle_digest: digest(handle), params, user_id: userId, expires_at: clock() + REQUEST_TTL_MS },
        MAX_PENDING_REQUESTS_PER_USER,
      );
      return { handle, connector: await deps.connector(params.connector_id) };
    },

    /**
     * The person's answer. Allowed: a grant for the connector (theirs, or any for an administrator) and a single-use
     * code for the client; denied, or not theirs to give: an error for the client. Either way the request is used up.
     */
    async answer(handle: string, allow: boolean): Promise<Redirect> {
      const row = await repository.takeRequest(digest(handle));
      const user = row?.user_id ? await deps.user(row.user_id) : undefined;
      if (!row || !user || row.expires_at <= clock())
        throw new NoRedirect("This page has expired or was already used: start again from the application.");
      const { params } = row;
      if (!allow) return redirect(params, { error: "access_denied", error_description: "The person declined" });
      const connector = await deps.connector(params.connector_id);
      if (!connector || (connector.owner_id !== user.id && user.role !== "admin")) {
        return redirect(params, {
          error: "invalid_target",
          error_description: "the resource is not a connector of the person who signed in",
        });
      }
      const grant: GrantRow = {
        id: deps.newId(),
        user_id: user.id,
        client_id: params.client_id,
        connector_id: connector.id,
        scope: params.scope,
        created_at: clock(),
        last_used_at: null,
      };
      await repository.insertGrant(grant);
      const code = secret();
      await repository.insertToken({
        digest: digest(code),
        grant_id: grant.id,
        kind: "code",
        code_challenge: params.code_challenge,
        redirect_uri: params.redirect_uri,
        expires_at: clock() + CODE_TTL_MS,
        used_at: null,
        created_at: clock(),
      });
      await repository.touchClient(params.client_id, clock());
      return redirect(params, { code });
    },

    /** The token endpoint ([RFC 6749 §4.1.3](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.3), [§6](https://www.rfc-editor.org/rfc/rfc6749#section-6)); throws OAuthError. */
    async token(form: URLSearchParams): Promise<TokenResponse> {
      const grantType = form.get("grant_type");
      if (grantType === "authorization_code") {
        const client = await tokenClient(form.get("client_id"));
        const code = form.get("code") ?? "";
        const row = code ? await repository.findToken(digest(code)) : undefined;
        if (!row || row.kind !== "code" || row.expires_at <= clock())
          throw new OAuthError("invalid_grant", "the code is unknown or expired");
        const grant = await repository.findGrant(row.grant_id);
        if (!grant || grant.client_id !== client.client_id)
          throw new OAuthError("invalid_grant", "the code was issued to another client");
        if (form.get("redirect_uri") !== row.redirect_uri)
          throw new OAuthError("invalid_grant", "redirect_uri differs from the authorization request's");
        const verifier = form.get("code_verifier") ?? "";
        // [RFC 7636 §4.6](https://www.rfc-editor.org/rfc/rfc7636#section-4.6): BASE64URL(SHA256(verifier)) must equal the challenge.
        if (!VERIFIER.test(verifier) || createHash("sha256").update(verifier).digest("base64url") !== row.code_challenge) {
          throw new OAuthError("invalid_grant", "the PKCE code_verifier does not match the code_challenge");
        }
        const resource = form.get("resource");
        if (resource !== null && connectorOfResource(resource) !== grant.connector_id)
          throw new OAuthError("invalid_target", "resource differs from the authorized one");
        // OAuth 2.1 §4.1.3: a code used twice is refused, and what the first use obtained is revoked.
        if (!(await repository.useToken(row.digest, "code", clock()))) {
          await repository.deleteGrant(grant.user_id, grant.id);
          throw new OAuthError("invalid_grant", "the code was used already; the tokens it gave are revoked");
        }
        return issueTokens(grant);
      }
      if (grantType === "refresh_token") {
        const client = await tokenClient(form.get("client_id"));
        const presented = form.get("refresh_token") ?? "";
        const row = presented ? await repository.findToken(digest(presented)) : undefined;
        if (!row || row.kind !== "refresh" || row.expires_at <= clock())
          throw new OAuthError("invalid_grant", "the refresh token is unknown, expired or revoked");
        const grant = await repository.findGrant(row.grant_id);
        if (!grant || grant.client_id !== client.client_id)
          throw new OAuthError("invalid_grant", "the refresh token was issued to another client");
        const resource = form.get("resource");
        if (resource !== null && connectorOfResource(resource) !== grant.connector_id)
          throw new OAuthError("invalid_target", "resource differs from the authorized one");
        // OAuth 2.1 §4.3.1: refresh tokens rotate; one presented a second time was stolen or replayed, so the grant ends.
        if (!(await repository.useToken(row.digest, "refresh", clock()))) {
          await repository.deleteGrant(grant.user_id, grant.id);
          throw new OAuthError("invalid_grant", "the refresh token was used already; the grant is revoked");
        }
        return issueTokens(grant);
      }
      throw new OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
    },

    /** [RFC 7009 §2](https://www.rfc-editor.org/rfc/rfc7009#section-2): ends a token (a refresh token: its whole grant); unknown tokens are not an error. */
    async revoke(form: URLSearchParams): Promise<void> {
      const token = form.get("token");
      if (!token) throw new OAuthError("invalid_request", "token is required");
      const client = await tokenClient(form.get("client_id"));
      const row = await repository.findToken(digest(token));
      if (!row || row.kind === "code") return;
      const grant = await repository.findGrant(row.grant_id);
      if (!grant || grant.client_id !== client.client_id) return;
      if (row.kind === "refresh") await repository.deleteGrant(grant.user_id, grant.id);
      else await repository.deleteToken(row.digest);
    },

    /** A bearer access token at the proxy: the person it acts for and the one connector it may reach, else undefined. */
    async verify(token: string): Promise<(Principal & { connector: string }) | undefined> {
      const owner = await repository.accessTokenOwner(digest(token));
      if (!owner || owner.kind !== "access" || owner.expires_at <= clock() || owner.disabled_at !== null) return undefined;
      return {
        id: owner.user_id,
        username: owner.username,
        role: owner.role,
        connector: owner.connector_id,
        credential: `oauth:${owner.client_id}`,
      };
    },

    grantsOf: async (userId: string) =>
      (await repository.grantsOf(userId)).map((grant) => ({ ...grant, scope: grantedScope(grant.scope) })),
    revokeGrant: (userId: string, id: string) => repository.deleteGrant(userId, id),
    /** The scheduler's: expired sign-in requests and tokens go, and grants nothing can use any more. */
    job: {
      name: "expire-authorization-server-records",
      run: async () => void (await repository.deleteExpired(clock(), clock() - CODE_TTL_MS)),
    } satisfies Job,
  };
}
export type AuthServer = ReturnType<typeof createAuthServer>;
