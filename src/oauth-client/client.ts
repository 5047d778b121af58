import * as oauth from "oauth4webapi";
import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import { UPSTREAM_CALL_TIMEOUT_MS } from "../http/fetch";
import type { Registry } from "../metrics/registry";
import type { LogFields, Logger } from "../observability/logger";
import type { Job } from "../scheduler/scheduler";
import { createOpenedCache } from "../secrets/opened-cache";
import type { Sealer } from "../secrets/sealer";
import { clientAuth, resolveClient, type ClientIdentityDeps } from "./client-identity";
import { canonicalResource, discoverAuthorizationServer, discoverResource, isGuessedServer } from "./discovery";
import { describeOAuthError, type OAuthFailure } from "./errors";
import type { OAuthHttp } from "./http";
import { CALLBACK_PATH, STATE_TTL_MS, type GrantContext, type GrantSecrets, type StateContext, type StateSecrets } from "./model";
import { refreshAt, retryAt } from "./refresh-plan";
import type { OAuthGrantRow, OAuthRepository } from "./repository";
import { grantSeal, stateSeal } from "./sealing";
import { sha256Hex } from "../secrets/digest";

/** Said when the OAuth flow failed at a server that publishes no OAuth metadata: its 401 may ask for a header. */
const NO_METADATA_HINT =
  "the MCP server publishes no OAuth metadata (RFC 9728, RFC 8414), so it may not use OAuth at all: if it takes an API key or token in a header, connect with `headers` instead";

export class OAuthFlowFailed extends Error {
  constructor(readonly failure: OAuthFailure) {
    super(failure.reason);
  }
}

export type OAuthClientDeps = {
  repository: OAuthRepository;
  sealer: Sealer;
  http: OAuthHttp;
  clock: () => number;
  /** Waits while another process holds a grant's refresh lease (injectable, so tests can step it). */
  sleep: (ms: number) => Promise<void>;
  publicUrl: () => string;
  /** Identifies this process in refresh leases. */
  processId: string;
  log?: Logger;
  /** Where oauth_token_refreshes_total{outcome} is counted: this process's refresh attempts. */
  metrics?: Registry;
};

export type BeginInput = {
  connectorId: string;
  serverUrl: URL;
  /** The MCP server's 401 (its WWW-Authenticate header carries resource_metadata and scope). */
  challenge: Response;
  client_id: string | null;
  client_secret: string | null;
  redirectUrl: string | null;
  /** A scope to ask for instead of the challenge's (a scope upgrade after insufficient_scope). */
  scope?: string;
  /** The user starting it, whose signed-in browser alone may finish it. */
  startedBy: string;
};

/** A pending authorization as the callback page shows it, before anything is exchanged. */
export type PendingAuthorization = { connectorId: string; startedBy: string | undefined };

export type CallbackOutcome =
  | { ok: true; connectorId: string; redirect_url: string | null }
  | { ok: false; connectorId: string | null; redirect_url: string | null; error: string; error_description: string };

export type RefreshOutcome = { ok: true; accessToken: string } | { ok: false; failure: OAuthFailure; expired: boolean };

/**
 * What a refresh attempt came to, as counted and logged: a new token; the authorization server's invalid_grant
 * ([RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2): the grant is revoked or expired); anything
 * else (network, 5xx, another OAuth error, no refresh token to send).
 */
export const REFRESH_OUTCOMES = ["ok", "failed", "invalid_grant"] as const;
type RefreshAttempt = (typeof REFRESH_OUTCOMES)[number];

const digest = sha256Hex;
/** A refresh lease: the token request's own timeout and a margin (a killed holder delays the others this long at most). */
const LEASE_MS = UPSTREAM_CALL_TIMEOUT_MS + 5_000;
/**
 * Another process (a replica) refreshing the same grant is waited for rather than raced (a second use of a rotated
 * refresh token would be refused, or revoke the grant): looked at every LEASE_POLL_MS, for as long as its token
 * request may take. A process killed while it held the lease holds up the others until the lease (LEASE_MS) ends.
 */
export const LEASE_POLL_MS = 250;
const LEASE_WAIT_MAX_MS = LEASE_MS + 1_000;
/** The client as oauth4webapi takes it, from what a state or grant recorded. */
const clientOf = (context: GrantContext): oauth.Client => ({
  client_id: context.client_id,
  token_endpoint_auth_method: context.token_endpoint_auth_method,
});

/**
 * The service as an OAuth 2.1 client of MCP servers' authorization servers (MCP authorization 2025-11-25, client
 * side), every protocol step through oauth4webapi: the authorization request, the code exchange, refresh with a
 * lease so one process refreshes a grant at a time, and revocation. It knows grants by connector id, nothing
 * more of connectors: authorization.ts ties it to their state.
 */
export function createOAuthClient(deps: OAuthClientDeps) {
  const { repository, sealer, http, clock } = deps;
  const identityDeps: ClientIdentityDeps = { http, repository, sealer, clock, publicUrl: deps.publicUrl };
  const redirectUri = () => `${deps.publicUrl()}${CALLBACK_PATH}`;
  const inFlight = new Map<string, Promise<RefreshOutcome>>();
  const refreshes = deps.metrics?.counter(
    "oauth_token_refreshes_total",
    "Refreshes of connectors' upstream OAuth tokens by this process, by outcome",
    "outcome",
    REFRESH_OUTCOMES,
  );
  const opened = createOpenedCache<GrantSecrets>();
  const openGrant = (row: OAuthGrantRow): GrantSecrets =>
    opened(row.secrets, () => JSON.parse(sealer.open(row.secrets, grantSeal(row.connector_id))) as GrantSecrets);

  /** Stores the tokens of a token response ([RFC 6749 §5.1](https://www.rfc-editor.org/rfc/rfc6749#section-5.1)) for the connector, sealed, with the next refresh time. */
  async function storeTokens(
    connectorId: string,
    context: GrantContext,
    tokens: oauth.TokenEndpointResponse,
    previous: GrantSecrets | null,
    clientSecret: string | null,
  ) {
    const now = clock();
    const expiresAt = typeof tokens.expires_in === "number" ? now + tokens.expires_in * 1000 : null;
    // [RFC 6749 §6](https://www.rfc-editor.org/rfc/rfc6749#section-6): a refresh response may omit the refresh token; the old one then stays valid.
    const refreshToken = tokens.refresh_token ?? previous?.refresh_token ?? null;
    const secrets: GrantSecrets = { access_token: tokens.access_token, refresh_token: refreshToken, client_secret: clientSecret };
    await repository.saveGrant({
      connector_id: connectorId,
      context: { ...context, scope: tokens.scope ?? context.scope },
      secrets: sealer.seal(JSON.stringify(secrets), grantSeal(connectorId)),
      expires_at: expiresAt,
      // Without a refresh token the grant is looked at again when it expires, to disconnect it with a reason.
      refresh_at: refreshToken ? refreshAt(now, expiresAt) : expiresAt,
      failures: 0,
      lease_owner: null,
      lease_until: null,
      updated_at: now,
    });
  }

  /**
   * Another process holds the grant's lease and is refreshing: wait until it stored new tokens, then use them. If it
   * let go (or died: its lease ran out) without new tokens, this process tries to refresh itself.
   */
  async function awaitOtherRefresh(
    connectorId: string,
    until: number,
    about: LogFields,
    rejected?: string,
  ): Promise<RefreshOutcome> {
    const first = await repository.findGrant(connectorId);
    // The other process may have stored new tokens already (its lease not yet given back): those are the answer.
    if (first && rejected !== undefined && (first.expires_at === null || first.expires_at > clock())) {
      const current = openGrant(first).access_token;
      if (current !== rejected) return { ok: true, accessToken: current };
    }
    const before = first?.secrets;
    for (;;) {
      await deps.sleep(LEASE_POLL_MS);
      const row = await repository.findGrant(connectorId);
      if (!row)
        return {
          ok: false,
          failure: { reason: "the connector has no OAuth grant", permanent: true, kind: "discovery" },
          expired: true,
        };
      if (row.secrets !== before) return { ok: true, accessToken: openGrant(row).access_token };
      const letGo = row.lease_until === null || row.lease_until < clock();
      if (letGo && clock() < until) return doRefresh(connectorId, about, rejected, until);
      if (clock() >= until) {
        return {
          ok: false,
          failure: { reason: "another process is refreshing the token", permanent: false, kind: "unreachable" },
          expired: false,
        };
      }
    }
  }

  /**
   * Counts and logs one refresh attempt of this process, once (concurrent callers share it: single flight). Waiting
   * for another process's refresh is not an attempt: that process counts its own. Never a token, code or secret.
   */
  function attempted(
    connectorId: string,
    about: LogFields,
    attempt: RefreshAttempt,
    outcome: RefreshOutcome,
    expiresIn?: number,
  ): RefreshOutcome {
    refreshes?.inc(attempt);
    const fields = { connector_id: connectorId, ...about, outcome: attempt };
    if (outcome.ok) {
      deps.log?.info("OAuth token refreshed", { ...fields, ...(expiresIn !== undefined && { expires_in_seconds: expiresIn }) });
    } else {
      const { reason, permanent } = outcome.failure;
      const message = attempt === "invalid_grant" ? "OAuth token refresh refused (invalid_grant)" : "OAuth token refresh failed";
      deps.log?.warn(message, { ...fields, reason, permanent, expired: outcome.expired });
    }
    return outcome;
  }

  async function doRefresh(
    connectorId: string,
    about: LogFields,
    rejected?: string,
    until = clock() + LEASE_WAIT_MAX_MS,
  ): Promise<RefreshOutcome> {
    const now = clock();
    if (!(await repository.lease(connectorId, deps.processId, now, now + LEASE_MS)))
      return awaitOtherRefresh(connectorId, until, about, rejected);
    try {
      const row = await repository.findGrant(connectorId);
      if (!row) {
        return attempted(connectorId, about, "failed", {
          ok: false,
          failure: { reason: "the connector has no OAuth grant", permanent: true, kind: "discovery" },
          expired: true,
        });
      }
      const context = row.context;
      const secrets = openGrant(row);
      const expired = row.expires_at !== null && row.expires_at <= clock();
      // Refreshed by another replica since the rejected token was sent: a second refresh would only rotate again.
      if (rejected !== undefined && secrets.access_token !== rejected && !expired)
        return { ok: true, accessToken: secrets.access_token };
      if (!secrets.refresh_token) {
        const failure: OAuthFailure = {
          reason: "the access token expired and the authorization server issued no refresh token",
          permanent: true,
          kind: "rejected",
        };
        return attempted(connectorId, about, "failed", { ok: false, failure, expired: true });
      }
      try {
        const client = clientOf(context);
        // [RFC 8707 §2.2](https://www.rfc-editor.org/rfc/rfc8707#section-2.2): the resource goes with the refresh request too, so the new token keeps its audience.
        const response = await oauth.refreshTokenGrantRequest(
          context.as,
          client,
          clientAuth(context, secrets.client_secret),
          secrets.refresh_token,
          {
            additionalParameters: { resource: context.resource },
            ...http.options(context.as.token_endpoint!),
          },
        );
        const tokens = await oauth.processRefreshTokenResponse(context.as, client, response);
        await storeTokens(connectorId, context, tokens, secrets, secrets.client_secret);
        return attempted(connectorId, about, "ok", { ok: true, accessToken: tokens.access_token }, tokens.expires_in);
      } catch (e) {
        const failure = describeOAuthError(e);
        const failures = row.failures + 1;
        await repository.updateGrant(connectorId, {
          failures,
          refresh_at: failure.permanent ? null : retryAt(clock(), failures, row.expires_at),
          updated_at: clock(),
        });
        const invalidGrant = e instanceof oauth.ResponseBodyError && e.error === "invalid_grant";
        return attempted(connectorId, about, invalidGrant ? "invalid_grant" : "failed", { ok: false, failure, expired });
      }
    } finally {
      await repository.release(connectorId, deps.processId);
    }
  }

  return {
    /**
     * Starts the authorization code flow with PKCE ([RFC 6749 §4.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1), RFC 7636, OAuth 2.1) for a connector whose
     * MCP server answered 401: discovery, client identity, then the authorization URL the user opens.
     */
    async begin(input: BeginInput): Promise<string> {
      let as: oauth.AuthorizationServer | undefined;
      try {
        const challenge = extractWWWAuthenticateParams(input.challenge);
        const resource = await discoverResource(input.serverUrl, challenge.resourceMetadataUrl, http);
        as = await discoverAuthorizationServer(resource.authorizationServer, http, resource.legacy);
        const callback = redirectUri();
        const identity = await resolveClient(
          as,
          { client_id: input.client_id, client_secret: input.client_secret },
          callback,
          identityDeps,
        );
        // Scope ([MCP authorization §"Scope Selection Strategy"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#scope-selection-strategy)): the challenge's, else the resource's scopes_supported, else none;
        // offline_access when the server offers it, so that a refresh token is issued.
        const scopes = new Set((input.scope ?? challenge.scope ?? resource.scopesSupported.join(" ")).split(" ").filter(Boolean));
        if (as.scopes_supported?.includes("offline_access")) scopes.add("offline_access");
        const scope = scopes.size ? [...scopes].join(" ") : null;

        const state = oauth.generateRandomState();
        const verifier = oauth.generateRandomCodeVerifier();
        const context: StateContext = {
          as,
          client_id: identity.client_id,
          token_endpoint_auth_method: identity.token_endpoint_auth_method,
          resource: canonicalResource(input.serverUrl),
          scope,
          redirect_uri: callback,
          redirect_url: input.redirectUrl,
          started_by: input.startedBy,
        };
        const secrets: StateSecrets = { code_verifier: verifier, client_secret: identity.client_secret };
        const now = clock();
        const stateDigest = digest(state);
        await repository.saveState({
          state_digest: stateDigest,
          connector_id: input.connectorId,
          secrets: sealer.seal(JSON.stringify(secrets), stateSeal(stateDigest)),
          context,
          expires_at: now + STATE_TTL_MS,
          created_at: now,
        });

        const url = new URL(as.authorization_endpoint!);
        url.searchParams.set("response_type", "code");
        url.searchParams.set("client_id", identity.client_id);
        url.searchParams.set("redirect_uri", callback);
        url.searchParams.set("state", state);
        url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(verifier));
        url.searchParams.set("code_challenge_method", "S256");
        // [RFC 8707 §2.1](https://www.rfc-editor.org/rfc/rfc8707#section-2.1): the MCP server this token is for.
        url.searchParams.set("resource", context.resource);
        if (scope) url.searchParams.set("scope", scope);
        return url.href;
      } catch (e) {
        const failure = describeOAuthError(e);
        if (as && isGuessedServer(as)) failure.reason += `; ${NO_METADATA_HINT}`;
        throw new OAuthFlowFailed(failure);
      }
    },

    /** The pending authorization a callback's `state` names, unexpired, without using it up; undefined if none. */
    async pending(params: URLSearchParams): Promise<PendingAuthorization | undefined> {
      const state = params.get("state");
      const row = state ? await repository.findState(digest(state)) : undefined;
      return row && row.expires_at > clock() ? { connectorId: row.connector_id, startedBy: row.context.started_by } : undefined;
    },

    /**
     * The callback ([RFC 6749 §4.1.2](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2)): validates state and iss (RFC 9207), exchanges the code, stores the tokens.
     * With `finishedBy`, only when the authorization was started by that user (else nothing is used up or exchanged).
     */
    async complete(params: URLSearchParams, finishedBy?: string): Promise<CallbackOutcome> {
      const state = params.get("state");
      const found = state && finishedBy !== undefined ? await repository.findState(digest(state)) : undefined;
      if (found && found.context.started_by !== undefined && found.context.started_by !== finishedBy) {
        return {
          ok: false,
          connectorId: null,
          redirect_url: null,
          error: "access_denied",
          error_description: "This authorization was started by another user",
        };
      }
      const row = state ? await repository.takeState(digest(state)) : undefined;
      if (!row || row.expires_at <= clock()) {
        return {
          ok: false,
          connectorId: row?.connector_id ?? null,
          redirect_url: null,
          error: "invalid_request",
          error_description: state
            ? "This authorization link was already used or has expired: start again with connect"
            : "The callback has no state parameter",
        };
      }
      const context = row.context;
      const secrets = JSON.parse(sealer.open(row.secrets, stateSeal(row.state_digest))) as StateSecrets;
      const base = { connectorId: row.connector_id, redirect_url: context.redirect_url };
      const client = clientOf(context);
      try {
        // Checks state, and iss against the issuer when the server sends it or says it will ([RFC 9207 §2.4](https://www.rfc-editor.org/rfc/rfc9207#section-2.4)).
        const validated = oauth.validateAuthResponse(context.as, client, params, state!);
        const response = await oauth.authorizationCodeGrantRequest(
          context.as,
          client,
          clientAuth(context, secrets.client_secret),
          validated,
          context.redirect_uri,
          secrets.code_verifier,
          { additionalParameters: { resource: context.resource }, ...http.options(context.as.token_endpoint!) },
        );
        const tokens = await oauth.processAuthorizationCodeResponse(context.as, client, response);
        const { redirect_url: _, ...grant } = context;
        await storeTokens(row.connector_id, grant, tokens, null, secrets.client_secret);
        return { ok: true, ...base };
      } catch (e) {
        if (e instanceof oauth.AuthorizationResponseError) {
          return {
            ok: false,
            ...base,
            error: e.error,
            error_description: e.error_description ?? "The authorization server did not grant access",
          };
        }
        const failure = describeOAuthError(e);
        return {
          ok: false,
          ...base,
          error: failure.kind === "rejected" ? "access_denied" : "server_error",
          error_description: failure.reason,
        };
      }
    },

    /** The bearer token for the proxy, or undefined when the connector has no grant. */
    async accessToken(connectorId: string): Promise<string | undefined> {
      const row = await repository.findGrant(connectorId);
      return row ? openGrant(row).access_token : undefined;
    },

    /**
     * Refreshes a connector's token; concurrent callers in this process share one request (single flight). Given the
     * access token a server just rejected, a newer one already stored (another replica refreshed meanwhile) is used
     * without another refresh. `about`: fields for the attempt's log line (the connector's owner).
     */
    refresh(connectorId: string, rejected?: string, about: LogFields = {}): Promise<RefreshOutcome> {
      let running = inFlight.get(connectorId);
      if (!running) {
        running = doRefresh(connectorId, about, rejected).finally(() => inFlight.delete(connectorId));
        inFlight.set(connectorId, running);
      }
      return running;
    },

    async grantedScope(connectorId: string): Promise<string | null> {
      return (await repository.findGrant(connectorId))?.context.scope ?? null;
    },
    forget: (connectorId: string) => repository.deleteGrant(connectorId),
    /** Forgets a pending authorization: its callback, should the person still finish it, is then refused as unknown. */
    abandon: (connectorId: string) => repository.deleteStatesOf(connectorId),

    /**
     * RFC 7009: tells the authorization server the grant is no longer wanted (refresh token, then access token),
     * when it has a revocation endpoint. Best effort: the caller forgets the tokens whatever the answer.
     */
    async revoke(connectorId: string): Promise<void> {
      const row = await repository.findGrant(connectorId);
      if (!row) return;
      const context = row.context;
      const endpoint = context.as.revocation_endpoint;
      if (!endpoint) return;
      const secrets = openGrant(row);
      const client = clientOf(context);
      const tokens: [string, string][] = [
        ...(secrets.refresh_token ? [[secrets.refresh_token, "refresh_token"] as [string, string]] : []),
        [secrets.access_token, "access_token"],
      ];
      for (const [token, hint] of tokens) {
        try {
          const response = await oauth.revocationRequest(context.as, client, clientAuth(context, secrets.client_secret), token, {
            additionalParameters: { token_type_hint: hint },
            ...http.options(endpoint),
          });
          await oauth.processRevocationResponse(response);
        } catch (e) {
          // [RFC 7009 §2.2.1](https://www.rfc-editor.org/rfc/rfc7009#section-2.2.1): unsupported_token_type is a normal answer (e.g. self-contained JWT access tokens).
          const expected = e instanceof oauth.ResponseBodyError && e.error === "unsupported_token_type";
          deps.log?.[expected ? "debug" : "warn"]("token revocation failed", {
            connector_id: connectorId,
            kind: hint,
            reason: describeOAuthError(e).reason,
          });
        }
      }
    },
    dueGrants: (limit: number) => repository.dueGrants(clock(), limit),
    /** The scheduler's: authorizations nobody finished in time go. */
    job: { name: "expire-oauth-states", run: async () => void (await repository.deleteExpiredStates(clock())) } satisfies Job,
  };
}
export type OAuthClient = ReturnType<typeof createOAuthClient>;
