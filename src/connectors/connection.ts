import type { FetchLike } from "../app";
import {
  AppError,
  Conflict,
  UpstreamFailed,
  UpstreamRejectedCredentials,
  UpstreamTimeout,
  invalidField,
} from "../http-errors/errors";
import { OAuthFlowFailed, type CallbackOutcome, type OAuthService, type RefreshOutcome } from "../oauth/service";
import { DeploymentFailed, type Runtime } from "../runtime/runtime";
import type { Principal } from "../users/model";
import { mcpHandshake, type HandshakeResult } from "../upstream/handshake";
import { assertStorableHeaders } from "./headers";
import type { ConnectBody, Connector } from "./model";
import { assertAllowedRedirect } from "./redirect-url";
import type { ConnectorRow } from "./repository";
import { sealContext, type ConnectorService } from "./service";

export type ConnectionServiceDeps = {
  connectors: ConnectorService;
  oauth: OAuthService;
  runtime: Runtime;
  open: (sealed: string, context: string) => string;
  /** A fetch that applies the URL guard to every request to an upstream. */
  upstreamFetch: FetchLike;
  handshakeTimeoutMs: number;
  /** Origins `redirect_url` may point at (the public URL's and OAUTH__ALLOWED_REDIRECT_ORIGINS). */
  allowedRedirectOrigins: () => readonly string[];
  seal: (value: string, context: string) => string;
  clock: () => number;
};

/** How long a managed deployment may stop serving before its connector is disconnected (spec part 8's 60 s). */
export const NOT_READY_GRACE_MS = 60_000;

/** What a failed connect-time handshake leaves as `disconnect_reason`, and what connect answers. */
function handshakeFailure(result: Exclude<HandshakeResult, { ok: true }>): { reason: string; error: AppError } {
  switch (result.kind) {
    case "unauthorized": {
      const reason = `The MCP server refused the supplied headers (HTTP ${result.status} ${result.status === 401 ? "Unauthorized" : "Forbidden"})`;
      return { reason, error: new UpstreamRejectedCredentials(`${reason}; the connector is disconnected`) };
    }
    case "unsafe":
      return { reason: `The MCP server URL is refused: ${result.detail}`, error: invalidField("url", result.detail) };
    case "timeout":
      return { reason: `The MCP server did not answer: ${result.detail}`, error: new UpstreamTimeout(`The MCP server ${result.detail}`) };
    case "unreachable":
      return { reason: `Could not reach the MCP server: ${result.detail}`, error: new UpstreamFailed(`Could not reach the MCP server: ${result.detail}`) };
    default:
      return { reason: `The MCP server ${result.detail}`, error: new UpstreamFailed(`The MCP server ${result.detail}`) };
  }
}

/** Starting and ending authorizations: connect, the OAuth callback, token refresh and scope upgrades. */
export function createConnectionService(deps: ConnectionServiceDeps) {
  const { connectors, oauth, runtime } = deps;
  // Connectors whose deployment a connect is making now: reconciliation leaves them alone.
  const deploying = new Set<string>();
  const notReadySince = new Map<string, number>();
  const handshake = (row: ConnectorRow, headers: Record<string, string>) =>
    mcpHandshake(new URL(row.url), { fetch: deps.upstreamFetch, headers, timeoutMs: deps.handshakeTimeoutMs });

  /** Runs the authorization code flow's first half and leaves the connector waiting for the user. */
  async function beginAuthorization(row: ConnectorRow, challenge: Response, redirectUrl: string | null, scope?: string): Promise<ConnectorRow> {
    let authorizationUrl: string;
    try {
      authorizationUrl = await oauth.begin({
        connectorId: row.id,
        serverUrl: new URL(row.url),
        challenge,
        client_id: row.client_id,
        client_secret: connectors.clientSecret(row),
        redirectUrl,
        scope,
      });
    } catch (e) {
      if (!(e instanceof OAuthFlowFailed)) throw e;
      const reason = `OAuth authorization could not start: ${e.failure.reason}`;
      connectors.markDisconnected(row, reason);
      throw e.failure.kind === "client" ? invalidField("client_id", e.failure.reason) : new UpstreamFailed(reason);
    }
    return connectors.update(row, {
      state: "auth_required",
      auth_method: "none",
      disconnect_reason: scope ? `The MCP server needs a wider scope (${scope}): open auth_request.authorization_url to grant it` : null,
      headers: null,
      header_names: null,
      authorization_url: authorizationUrl,
      redirect_url: redirectUrl,
    });
  }

  /**
   * Spec part 4 rule 4: connecting a managed stdio connector deploys its preset (replacing any earlier
   * deployment), waits for readiness (up to 60 s), then proxies to it.
   */
  async function connectManaged(row: ConnectorRow, body: ConnectBody, redirectUrl: string | null): Promise<Connector> {
    if (body.headers !== undefined && Object.keys(body.headers).length > 0) {
      throw invalidField("body.headers", "headers do not apply to a managed stdio connector (use accessToken)");
    }
    const preset = connectors.presetOf(row);
    if (!preset?.stdio) {
      throw new Conflict(`No preset with a stdio configuration matches ${row.url} any more: the service's CONNECTOR__PRESETS changed`);
    }
    const accessToken = body.accessToken ?? null;
    deploying.add(row.id);
    try {
      await runtime.deploy({ connectorId: row.id, stdio: preset.stdio, accessToken });
    } catch (e) {
      if (!(e instanceof DeploymentFailed)) throw e;
      const reason = `The managed server could not be started: ${e.message}`;
      connectors.markDisconnected(connectors.findRow(row.id) ?? row, reason);
      throw e.timedOut ? new UpstreamTimeout(reason) : new UpstreamFailed(reason);
    } finally {
      deploying.delete(row.id);
    }
    return connectors.view(
      connectors.update(row, {
        state: "connected",
        auth_method: "none",
        disconnect_reason: null,
        headers: null,
        header_names: null,
        access_token: accessToken === null ? null : deps.seal(accessToken, sealContext(row.id, "access_token")),
        authorization_url: null,
        redirect_url: redirectUrl,
      }),
    );
  }

  return {
    /** Where the proxy sends a connector's requests: its URL, or its managed deployment's endpoint (and how). */
    target(row: ConnectorRow): { url: URL; fetch?: FetchLike } | undefined {
      if (!row.url.startsWith("mcp+stdio:")) return { url: new URL(row.url) };
      const url = runtime.endpoint(row.id);
      return url && { url, fetch: runtime.fetch };
    },

    /**
     * The scheduler's reconciliation (issue #5): every connected managed connector has a running deployment
     * (after a restart they are started again), and no deployment outlives its connector's connection.
     */
    async reconcileDeployments(): Promise<void> {
      const wanted = connectors.connectedManaged();
      const wantedIds = new Set(wanted.map((r) => r.id));
      const existing = await runtime.list();
      for (const id of existing.keys()) if (!wantedIds.has(id) && !deploying.has(id)) await runtime.remove(id);
      for (const row of wanted) {
        if (deploying.has(row.id)) continue;
        const state = existing.get(row.id);
        if (state?.ready) {
          notReadySince.delete(row.id);
          continue;
        }
        if (state && !state.ready) {
          // A deployment that stopped serving (crash loop, evicted, image gone): give it a grace period to come
          // back, as Kubernetes restarts it, then disconnect with what its status says.
          const since = notReadySince.get(row.id) ?? deps.clock();
          notReadySince.set(row.id, since);
          if (deps.clock() - since < NOT_READY_GRACE_MS) continue;
          notReadySince.delete(row.id);
          await runtime.remove(row.id);
          connectors.disconnectIfConnected(row.id, `The managed server stopped serving: ${state.reason}`);
          continue;
        }
        const preset = connectors.presetOf(row);
        try {
          if (!preset?.stdio) throw new DeploymentFailed(`no preset with a stdio configuration matches ${row.url} any more`);
          const accessToken = row.access_token ? deps.open(row.access_token, sealContext(row.id, "access_token")) : null;
          await runtime.deploy({ connectorId: row.id, stdio: preset.stdio, accessToken });
        } catch (e) {
          connectors.disconnectIfConnected(row.id, `The managed server could not be restarted: ${(e as Error).message}`);
        }
      }
    },

    /**
     * Connect starts over from any state (DESIGN.md): the MCP handshake runs with the given headers (or none).
     * Headers the server accepts are stored; a server that answers 401 to a connect without headers gets the
     * OAuth flow (MCP authorization 2025-11-25), and the connector waits in `auth_required`.
     */
    async connect(caller: Principal, id: string, body: ConnectBody): Promise<Connector> {
      const row = connectors.owned(caller, id);
      const redirectUrl = body.redirect_url === undefined ? null : assertAllowedRedirect(body.redirect_url, deps.allowedRedirectOrigins());
      const headers = body.headers ?? {};
      assertStorableHeaders(headers);
      if (row.url.startsWith("mcp+stdio:")) return connectManaged(row, body, redirectUrl);
      oauth.forget(row.id);
      const withHeaders = Object.keys(headers).length > 0;
      const result = await handshake(row, headers);
      if (!result.ok && result.kind === "unauthorized" && result.status === 401 && !withHeaders) {
        const challenge = new Response(null, { status: 401, headers: result.wwwAuthenticate ? { "www-authenticate": result.wwwAuthenticate } : {} });
        return connectors.view(await beginAuthorization(connectors.owned(caller, id), challenge, redirectUrl));
      }
      if (!result.ok) {
        const { reason, error } = handshakeFailure(result);
        connectors.markDisconnected(connectors.owned(caller, id), reason);
        throw error;
      }
      return connectors.view(
        connectors.update(connectors.owned(caller, id), {
          state: "connected",
          auth_method: withHeaders ? "headers" : "none",
          disconnect_reason: null,
          headers: withHeaders ? deps.seal(JSON.stringify(headers), sealContext(row.id, "headers")) : null,
          header_names: withHeaders ? Object.keys(headers) : null,
          access_token: body.accessToken === undefined ? null : deps.seal(body.accessToken, sealContext(row.id, "access_token")),
          authorization_url: null,
          redirect_url: redirectUrl,
        }),
      );
    },

    /**
     * The OAuth callback: on success the connector is connected once an MCP handshake with the new token
     * works; any failure leaves it disconnected with the reason (spec part 7).
     */
    async completeAuthorization(params: URLSearchParams): Promise<CallbackOutcome> {
      const outcome = await oauth.complete(params);
      const row = outcome.connectorId ? connectors.findRow(outcome.connectorId) : undefined;
      if (!row) return outcome.ok ? { ok: false, connectorId: null, redirect_url: outcome.redirect_url, error: "invalid_request", error_description: "The connector no longer exists" } : outcome;
      if (!outcome.ok) {
        connectors.markDisconnected(row, `Authorization failed: ${outcome.error}: ${outcome.error_description}`);
        return outcome;
      }
      const token = oauth.accessToken(row.id)!;
      const result = await handshake(row, { authorization: `Bearer ${token}` });
      if (!result.ok) {
        const reason = `The MCP server refused the new access token: ${result.kind === "unauthorized" ? `HTTP ${result.status}` : result.detail}`;
        connectors.markDisconnected(row, reason);
        return { ok: false, connectorId: row.id, redirect_url: outcome.redirect_url, error: "server_error", error_description: reason };
      }
      connectors.update(row, { state: "connected", auth_method: "oauth", disconnect_reason: null, authorization_url: null });
      return outcome;
    },

    /** Headers the proxy adds for this connector: its stored headers, or its OAuth access token. */
    credentials(row: ConnectorRow): Record<string, string> {
      if (row.auth_method === "oauth") {
        const token = oauth.accessToken(row.id);
        return token ? { authorization: `Bearer ${token}` } : {};
      }
      return connectors.storedHeaders(row);
    },

    /**
     * Refreshes a connector's token (the scheduler, or the proxy after a 401). A permanent failure, or any
     * failure once the token has expired, disconnects the connector with the reason.
     */
    async refresh(connectorId: string): Promise<RefreshOutcome> {
      const outcome = await oauth.refresh(connectorId);
      if (!outcome.ok && (outcome.failure.permanent || outcome.expired)) {
        connectors.disconnectIfConnected(connectorId, `OAuth token refresh failed: ${outcome.failure.reason}`);
      }
      return outcome;
    },

    /** A connector connected without credentials whose server now answers 401: start the OAuth flow. */
    async authorizeAfterChallenge(row: ConnectorRow, challenge: Response): Promise<void> {
      await beginAuthorization(row, challenge, row.redirect_url).catch(() => undefined);
    },

    /** Disconnect at the user's request: an OAuth grant is revoked at the authorization server first (RFC 7009). */
    async disconnect(caller: Principal, id: string): Promise<Connector> {
      const row = connectors.owned(caller, id);
      if (row.auth_method === "oauth" && row.state === "connected") await oauth.revoke(row.id);
      return connectors.disconnect(caller, id);
    },

    /** Delete: the same revocation, then the connector and everything it had go. */
    async delete(caller: Principal, id: string): Promise<void> {
      const row = connectors.owned(caller, id);
      if (row.auth_method === "oauth") await oauth.revoke(row.id);
      connectors.delete(caller, id);
    },

    /** RFC 6750 §3.1 insufficient_scope: start a new authorization asking for the wider scope. */
    async upgradeScope(row: ConnectorRow, challenge: Response, requiredScope: string): Promise<void> {
      const granted = oauth.grantedScope(row.id) ?? "";
      const scope = [...new Set([...granted.split(" "), ...requiredScope.split(" ")].filter(Boolean))].join(" ");
      await beginAuthorization(row, challenge, row.redirect_url, scope).catch(() => undefined);
    },
  };
}
export type ConnectionService = ReturnType<typeof createConnectionService>;
