import { isManaged, connectorView, type ConnectorService } from "../connectors/service";
import { assertStorableHeaders } from "../connectors/headers";
import type { ConnectBody, Connector, UpdateConnectorBody } from "../connectors/model";
import type { ConnectorRow } from "../connectors/repository";
import { DISCONNECT_REQUESTED, type Transitions } from "../connectors/transitions";
import type { Deployments } from "../deployments/service";
import { Conflict, UpstreamFailed, UpstreamTimeout, invalidField } from "../http-errors/errors";
import { UnsafeUrl, type FetchLike } from "../http/fetch";
import type { UrlGuard } from "../security/url-guard";
import type { Authorization } from "../oauth-client/authorization";
import type { OAuthClient } from "../oauth-client/client";
import type { Logger } from "../observability/logger";
import type { Tracing } from "../observability/tracing";
import { DeploymentFailed } from "../runtime/runtime";
import { MANAGED_PROTOCOL_VERSIONS } from "../gateway/era";
import { handshakeFailure, mcpHandshake } from "../upstream/handshake";
import type { Principal } from "../users/model";
import { assertAllowedRedirect } from "./redirect-url";

export type ConnectionServiceDeps = {
  connectors: ConnectorService;
  transitions: Transitions;
  authorization: Authorization;
  oauth: OAuthClient;
  deployments: Deployments;
  /** A fetch that applies the URL guard to every request to an upstream. */
  upstreamFetch: FetchLike;
  /** For where a server redirects to: the same address rules as for the connector's own URL. */
  urlGuard: UrlGuard;
  publicUrl: () => string;
  /** OAUTH__ALLOWED_REDIRECT_ORIGINS: where `redirect_url` may point besides the public URL's origin. */
  allowedRedirectOrigins: readonly string[];
  /** OpenTelemetry, when on: a span per connect. */
  tracing?: Tracing;
  /** Before a connector is deleted: what refers to it lets go, and says so (virtual servers it is a member of). */
  leaving?: (connectorId: string) => Promise<void>;
};

/**
 * What a user does to a connector's connection: connect (by handshake with headers, by OAuth, or by deploying a
 * managed server), disconnect and delete. Each ends in a transition (connectors/transitions.ts).
 */
export function createConnectionService(deps: ConnectionServiceDeps) {
  const { connectors, transitions, authorization, oauth, deployments } = deps;
  const refused = (url: URL) => {
    try {
      deps.urlGuard.checkLiteral(url);
      return undefined;
    } catch (e) {
      if (e instanceof UnsafeUrl) return e.message;
      throw e;
    }
  };

  /**
   * docs/interface.md §5: connecting a managed stdio connector deploys its preset (replacing any earlier
   * deployment), waits for readiness (up to 60 s), then proxies to it.
   */
  async function connectManaged(row: ConnectorRow, body: ConnectBody, redirectUrl: string | null): Promise<Connector> {
    if (body.headers !== undefined && Object.keys(body.headers).length > 0) {
      throw invalidField("body.headers", "headers do not apply to a managed stdio connector (use accessToken)");
    }
    try {
      await deployments.deploy(row, body.accessToken ?? null);
    } catch (e) {
      if (!(e instanceof DeploymentFailed)) throw e;
      const reason = `The managed server could not be started: ${e.message}`;
      await transitions.disconnected(row, reason);
      throw e.timedOut ? new UpstreamTimeout(reason) : new UpstreamFailed(reason);
    }
    // The gateway in front of the stdio server serves both eras itself (gateway/modern.ts): no client is bridged.
    const auth = { method: "none" as const, accessToken: body.accessToken };
    return connectorView(await transitions.connected(row, auth, redirectUrl, MANAGED_PROTOCOL_VERSIONS));
  }

  /**
   * Connect starts over from any state (docs/interface.md §4.4): the MCP handshake runs with the given headers (or none).
   * Headers the server accepts are stored; a server that answers 401 to a connect without headers gets the
   * OAuth flow (MCP authorization 2025-11-25), and the connector waits in `auth_required`.
   */
  async function connect(caller: Principal, id: string, body: ConnectBody): Promise<Connector> {
    const row = await connectors.owned(caller, id);
    const allowedOrigins = [new URL(deps.publicUrl()).origin, ...deps.allowedRedirectOrigins];
    const redirectUrl = body.redirect_url === undefined ? null : assertAllowedRedirect(body.redirect_url, allowedOrigins);
    const headers = body.headers ?? {};
    assertStorableHeaders(headers);
    if (isManaged(row)) return connectManaged(row, body, redirectUrl);
    const withHeaders = Object.keys(headers).length > 0;
    const result = await mcpHandshake(new URL(row.url), { fetch: deps.upstreamFetch, headers, discover: true });
    if (!result.ok && result.kind === "unauthorized" && result.status === 401 && !withHeaders) {
      const challenge = new Response(null, {
        status: 401,
        headers: result.wwwAuthenticate ? { "www-authenticate": result.wwwAuthenticate } : {},
      });
      return connectorView(await authorization.begin(row, challenge, redirectUrl, caller.id));
    }
    if (!result.ok) {
      // A working connection is not given up for one that failed (an outage, a typo in new headers).
      const kept = row.state === "connected";
      const { reason, error } = handshakeFailure(result, { kept, refused });
      if (!kept) await transitions.disconnected(row, reason);
      throw error;
    }
    // Proven: the new connection replaces whatever the connector had, an OAuth grant included.
    await oauth.forget(row.id);
    const auth = withHeaders
      ? { method: "headers" as const, headers, accessToken: body.accessToken }
      : { method: "none" as const, accessToken: body.accessToken };
    return connectorView(await transitions.connected(row, auth, redirectUrl, result.protocolVersions));
  }

  /** A span around each connect when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT): PATCH's connects too. */
  const { tracing } = deps;
  const tracedConnect: typeof connect = tracing
    ? (caller, id, body) =>
        tracing.around("connector.connect", { "mcp.connector.id": id, "enduser.id": caller.id }, () => connect(caller, id, body))
    : connect;

  /** Delete: an OAuth grant is revoked at the authorization server first (RFC 7009), then the connector and everything it had go. */
  async function remove(row: ConnectorRow): Promise<void> {
    if (row.auth_method === "oauth") await oauth.revoke(row.id);
    await deps.leaving?.(row.id);
    await transitions.deleted(row);
  }

  return {
    connect: tracedConnect,

    /**
     * PATCH: a new URL (the connector then needs a new connect), new metadata, tool policy and rate limits (connectors/service.ts),
     * and new headers for a connector connected with headers — proven by a handshake first, as connect does, so
     * refused headers leave the old ones working.
     */
    async update(caller: Principal, id: string, body: UpdateConnectorBody): Promise<Connector> {
      const settings = body.metadata !== undefined || body.tool_policy !== undefined || body.rate_limits !== undefined;
      if (!settings && body.headers === undefined && body.url === undefined)
        throw invalidField("body", "must change url, metadata, tool_policy, rate_limits or headers");
      if (body.url !== undefined && body.headers !== undefined)
        throw invalidField("body.headers", "cannot come with a new url: connect the connector at its new URL with headers");
      let row = await connectors.owned(caller, id);
      if (body.url !== undefined) {
        const move = await connectors.planMove(caller, id, body.url);
        if (move) {
          // The old server's grant is revoked there first, as a disconnect does (RFC 7009); a pending authorization
          // is forgotten, so finishing it later cannot hand the old server's token to the new URL.
          if (row.auth_method === "oauth" && row.state === "connected") await oauth.revoke(row.id);
          await oauth.abandon(row.id);
          const reason = `The URL changed from ${row.url} to ${move.target.url}: connect it again`;
          row = await transitions.moved(move.row, move.target, reason);
        }
      }
      if (body.headers !== undefined) {
        if (row.state !== "connected" || row.auth_method !== "headers") {
          throw new Conflict("Only a connector connected with headers has headers to replace: connect it with headers instead");
        }
        if (Object.keys(body.headers).length === 0) throw invalidField("body.headers", "must name at least one header");
        await tracedConnect(caller, id, { headers: body.headers });
      }
      if (!settings) return connectors.get(caller, id);
      return connectors.updateSettings(caller, id, {
        ...(body.metadata !== undefined && { metadata: body.metadata }),
        ...(body.tool_policy !== undefined && { tool_policy: body.tool_policy }),
        ...(body.rate_limits !== undefined && { rate_limits: body.rate_limits }),
      });
    },

    /** Disconnect at the user's request: an OAuth grant is revoked at the authorization server first (RFC 7009). */
    async disconnect(caller: Principal, id: string): Promise<Connector> {
      const row = await connectors.owned(caller, id);
      if (row.state === "created") throw new Conflict("The connector was never connected: connect it first");
      if (row.state === "disconnected") return connectorView(row);
      if (row.auth_method === "oauth" && row.state === "connected") await oauth.revoke(row.id);
      return connectorView(await transitions.disconnected(row, DISCONNECT_REQUESTED));
    },

    delete: async (caller: Principal, id: string): Promise<void> => remove(await connectors.owned(caller, id)),

    /** A deleted user's connectors go as DELETE takes each: grants revoked upstream, deployments removed. */
    async deleteAllOf(ownerId: string): Promise<void> {
      for (let rows = await connectors.firstOf(ownerId, 50); rows.length > 0; rows = await connectors.firstOf(ownerId, 50)) {
        for (const row of rows) await remove(row);
      }
    },
  };
}
export type ConnectionService = ReturnType<typeof createConnectionService>;

/**
 * When a connection ends (transitions.ts `ended`), what lives outside the connector's row goes with it: its
 * deployment (in the background: a runtime can be slow) and its OAuth grant.
 */
export function connectionEnded(deps: {
  deployments: Pick<Deployments, "remove">;
  oauth: Pick<OAuthClient, "forget">;
  log: Logger;
}) {
  return async (row: ConnectorRow): Promise<void> => {
    if (isManaged(row)) deps.deployments.remove(row.id);
    await deps.oauth
      .forget(row.id)
      .catch((e) => deps.log.warn("could not forget an OAuth grant", { connector_id: row.id, error: (e as Error).message }));
  };
}
