import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import type { ConnectionService } from "../connectors/connection";
import type { ConnectorRow } from "../connectors/repository";
import type { ConnectorService } from "../connectors/service";
import { Conflict, Forbidden, UpstreamFailed } from "../http-errors/errors";
import type { Principal } from "../users/model";
import { forward, type ForwardOptions, type Forwarded } from "./forward";
import { upstreamRequestHeaders } from "./headers";

export type ProxyServiceDeps = {
  connectors: ConnectorService;
  connections: ConnectionService;
  forward: ForwardOptions;
  clock: () => number;
};

export function createProxyService({ connectors, connections, forward: baseOptions, clock }: ProxyServiceDeps) {
  /** The stored credentials stopped working: the caller gets a 502 (a 401 would blame its own credentials). */
  function credentialsRejected(row: ConnectorRow, why: string): never {
    const reason = `The MCP server rejected the ${why} (HTTP 401) at ${new Date(clock()).toISOString()}`;
    connectors.disconnectIfConnected(row.id, reason);
    throw new UpstreamFailed(`${reason}; the connector is now disconnected: connect it again`);
  }

  /**
   * An OAuth connector's 401: refresh once (single flight per connector) and replay the request with the new
   * token — the body was teed, so a POST can be sent again. MCP authorization (2025-11-25) §"Token Handling".
   */
  async function retryAfterRefresh(request: Request, row: ConnectorRow, url: URL, headers: Headers, spare: ReadableStream<Uint8Array> | null): Promise<Forwarded> {
    const refreshed = await connections.refresh(row.id);
    if (!refreshed.ok) {
      await spare?.cancel();
      credentialsRejected(row, `access token and its refresh failed (${refreshed.failure.reason})`);
    }
    headers.set("authorization", `Bearer ${refreshed.accessToken}`);
    const retried = await forward(request, url, headers, baseOptions, spare);
    if (retried.upstream.status === 401) {
      await retried.upstream.body?.cancel();
      credentialsRejected(row, "freshly refreshed access token");
    }
    return retried;
  }

  return {
    /** Ends the relayed notification (GET) streams; called when the service shuts down. */
    closeNotificationStreams(): number {
      const closers = [...baseOptions.streams];
      for (const close of closers) close();
      return closers.length;
    },

    /** Relays one MCP request of `caller` to the connector's server (DESIGN.md "MCP proxy"). */
    async handle(caller: Principal, id: string, request: Request): Promise<Response> {
      const row = connectors.owned(caller, id, true);
      if (row.state !== "connected") {
        const why = row.disconnect_reason ? ` (${row.disconnect_reason})` : "";
        throw new Conflict(`The connector is ${row.state}${why}: connect it before sending MCP requests`);
      }
      const target = connections.target(row);
      if (!target) throw new UpstreamFailed("The connector's managed server is not running; it is being started again");
      const { url } = target;
      const options = target.fetch ? { ...baseOptions, fetch: target.fetch } : baseOptions;
      const headers = upstreamRequestHeaders(request.headers, connections.credentials(row));
      const oauth = row.auth_method === "oauth";
      // Only an OAuth connector can recover from a 401, by replaying: keep a copy of the body for that.
      const [body, spare] = oauth && request.body ? request.body.tee() : [request.body, null];
      let forwarded = await forward(request, url, headers, options, body);
      const status = forwarded.upstream.status;
      if (status === 401) {
        await forwarded.upstream.body?.cancel();
        if (row.auth_method === "none" && target.fetch === undefined) {
          // An open server that now wants authorization (e.g. only for tools): the OAuth flow, as at connect.
          await connections.authorizeAfterChallenge(row, forwarded.upstream);
          throw new Conflict(
            "The MCP server now requires authorization: the connector is auth_required; open its auth_request.authorization_url, then retry",
          );
        }
        if (!oauth) credentialsRejected(row, "stored credentials");
        forwarded = await retryAfterRefresh(request, row, url, headers, spare);
      } else {
        void spare?.cancel();
      }
      if (oauth && forwarded.upstream.status === 403) {
        const challenge = extractWWWAuthenticateParams(forwarded.upstream);
        if (challenge.error === "insufficient_scope" && challenge.scope) {
          await forwarded.upstream.body?.cancel();
          await connections.upgradeScope(row, forwarded.upstream, challenge.scope);
          throw new Forbidden(
            `The MCP server needs the scope "${challenge.scope}", which the connector was not granted: open the connector's auth_request.authorization_url to grant it`,
          );
        }
      }
      return forwarded.relay();
    },
  };
}
export type ProxyService = ReturnType<typeof createProxyService>;
