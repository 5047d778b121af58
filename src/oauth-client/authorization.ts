import type { SealedColumns } from "../connectors/sealed-columns";
import type { ConnectorRepository, ConnectorRow } from "../connectors/repository";
import type { Transitions } from "../connectors/transitions";
import type { FetchLike } from "../http/fetch";
import type { Tracing } from "../observability/tracing";
import type { Job } from "../scheduler/scheduler";
import { describeHandshake, mcpHandshake } from "../upstream/handshake";
import { OAuthFlowFailed, type CallbackOutcome, type OAuthClient, type RefreshOutcome } from "./client";
import { oauthProblem } from "./errors";

export type AuthorizationDeps = {
  oauth: OAuthClient;
  connectorRows: ConnectorRepository;
  sealed: SealedColumns;
  transitions: Transitions;
  /** A fetch that applies the URL guard to every request to an upstream. */
  upstreamFetch: FetchLike;
  /** OpenTelemetry, when on: a span per refresh. */
  tracing?: Tracing;
};

/**
 * A connector's OAuth authorization: what the OAuth client (client.ts) does, tied to the connector's state —
 * auth_required while the user is away, connected once the callback's token passes an MCP handshake,
 * disconnected with the reason when anything fails (docs/interface.md §4.3), including a refresh that cannot succeed.
 */
export function createAuthorization(deps: AuthorizationDeps) {
  const { oauth, transitions } = deps;

  /**
   * The authorization code flow's first half; the connector then waits in auth_required for the user. `startedBy`:
   * the user starting it, whose signed-in browser alone may finish it (callback.ts).
   */
  async function begin(
    row: ConnectorRow,
    challenge: Response,
    redirectUrl: string | null,
    startedBy: string,
    scope?: string,
  ): Promise<ConnectorRow> {
    let authorizationUrl: string;
    try {
      authorizationUrl = await oauth.begin({
        connectorId: row.id,
        serverUrl: new URL(row.url),
        challenge,
        client_id: row.client_id,
        client_secret: deps.sealed.clientSecret(row),
        redirectUrl,
        scope,
        startedBy,
      });
    } catch (e) {
      if (!(e instanceof OAuthFlowFailed)) throw e;
      const reason = `OAuth authorization could not start: ${e.failure.reason}`;
      await transitions.disconnected(row, reason);
      throw oauthProblem(e.failure, reason);
    }
    const why = scope ? `The MCP server needs a wider scope (${scope}): open auth_request.authorization_url to grant it` : null;
    return transitions.authRequired(row, authorizationUrl, redirectUrl, why);
  }

  /**
   * Refreshes a connector's token (the scheduler, or the proxy after a 401). A permanent failure, or any
   * failure once the token has expired, disconnects the connector with the reason.
   */
  async function refreshOnce(connectorId: string, rejected?: string): Promise<RefreshOutcome> {
    // Whose connector, for the attempt's log line (the OAuth client knows grants, not owners); an owner never changes.
    const owner = (await deps.connectorRows.findByIdCached(connectorId))?.owner_id;
    const outcome = await oauth.refresh(connectorId, rejected, owner === undefined ? {} : { owner_id: owner });
    if (!outcome.ok && (outcome.failure.permanent || outcome.expired)) {
      await transitions.disconnectIfConnected(connectorId, `OAuth token refresh failed: ${outcome.failure.reason}`);
    }
    return outcome;
  }
  /** A span around each refresh when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT). */
  const { tracing } = deps;
  const refresh: typeof refreshOnce = tracing
    ? (id, rejected) => tracing.around("connector.oauth.refresh", { "mcp.connector.id": id }, () => refreshOnce(id, rejected))
    : refreshOnce;

  return {
    begin,

    pending: oauth.pending,

    /**
     * The OAuth callback: on success the connector is connected once an MCP handshake with the new token
     * works; any failure leaves it disconnected with the reason. With `finishedBy`, only an authorization that user
     * started is used (another user's is left as it was).
     */
    async complete(params: URLSearchParams, finishedBy?: string): Promise<CallbackOutcome> {
      const outcome = await oauth.complete(params, finishedBy);
      if (!outcome.ok && outcome.connectorId === null) return outcome;
      const row = outcome.connectorId ? await deps.connectorRows.findById(outcome.connectorId) : undefined;
      if (!row) {
        return outcome.ok
          ? {
              ok: false,
              connectorId: null,
              redirect_url: outcome.redirect_url,
              error: "invalid_request",
              error_description: "The connector no longer exists",
            }
          : outcome;
      }
      if (!outcome.ok) {
        await transitions.disconnected(row, `Authorization failed: ${outcome.error}: ${outcome.error_description}`);
        return outcome;
      }
      const token = await oauth.accessToken(row.id);
      const result = await mcpHandshake(new URL(row.url), {
        fetch: deps.upstreamFetch,
        headers: { authorization: `Bearer ${token}` },
        discover: true,
      });
      if (!result.ok) {
        const reason = `The MCP server refused the new access token: ${describeHandshake(result)}`;
        await transitions.disconnected(row, reason);
        return {
          ok: false,
          connectorId: row.id,
          redirect_url: outcome.redirect_url,
          error: "server_error",
          error_description: reason,
        };
      }
      await transitions.connected(row, { method: "oauth" }, row.redirect_url, result.protocolVersions);
      return outcome;
    },

    refresh,

    /** The scheduler's: grants whose tokens are due are refreshed, 20 a tick (each under its grant's lease: client.ts). */
    job: {
      name: "refresh-oauth-tokens",
      async run() {
        for (const id of await oauth.dueGrants(20)) await refresh(id);
      },
    } satisfies Job,

    /** A connector connected without credentials whose server now answers 401: start the OAuth flow; its link, or null. */
    async afterChallenge(row: ConnectorRow, challenge: Response): Promise<string | null> {
      // Started by a proxied request, not by a person: the connector's owner finishes it. The link to open, if it started.
      const written = await begin(row, challenge, row.redirect_url, row.owner_id).catch(() => undefined);
      return written?.authorization_url ?? null;
    },

    /**
     * [RFC 6750 §3.1](https://www.rfc-editor.org/rfc/rfc6750#section-3.1) insufficient_scope: a new authorization
     * asking for the granted scope plus the one the server wants.
     */
    async upgradeScope(row: ConnectorRow, challenge: Response, requiredScope: string): Promise<void> {
      const granted = (await oauth.grantedScope(row.id)) ?? "";
      const scope = [...new Set([...granted.split(" "), ...requiredScope.split(" ")].filter(Boolean))].join(" ");
      await begin(row, challenge, row.redirect_url, row.owner_id, scope).catch(() => undefined);
    },
  };
}
export type Authorization = ReturnType<typeof createAuthorization>;
