import { Conflict, UpstreamFailed } from "../http-errors/errors";
import type { ConnectorService } from "../connectors/service";
import type { Principal } from "../users/model";
import { forward, type ForwardOptions } from "./forward";
import { upstreamRequestHeaders } from "./headers";

export type ProxyServiceDeps = { connectors: ConnectorService; forward: ForwardOptions; clock: () => number };

export function createProxyService({ connectors, forward: options, clock }: ProxyServiceDeps) {
  return {
    /** Ends the relayed notification (GET) streams; called when the service shuts down. */
    closeNotificationStreams(): number {
      const closers = [...options.streams];
      for (const close of closers) close();
      return closers.length;
    },

    /** Relays one MCP request of `caller` to the connector's server (DESIGN.md "MCP proxy"). */
    async handle(caller: Principal, id: string, request: Request): Promise<Response> {
      const row = connectors.owned(caller, id, true);
      if (row.state !== "connected") {
        const why = row.state === "disconnected" && row.disconnect_reason ? ` (${row.disconnect_reason})` : "";
        throw new Conflict(`The connector is ${row.state}${why}: connect it before sending MCP requests`);
      }
      const headers = upstreamRequestHeaders(request.headers, connectors.storedHeaders(row));
      const forwarded = await forward(request, new URL(row.url), headers, options);
      if (forwarded.upstream.status === 401) {
        // The stored credentials stopped working. A client told 401 would think its own credentials for this
        // service were wrong, so it gets a 502 and the connector says why it is disconnected.
        await forwarded.upstream.body?.cancel();
        const reason = `The MCP server rejected the stored credentials (HTTP 401) at ${new Date(clock()).toISOString()}`;
        connectors.markDisconnected(connectors.owned(caller, id), reason);
        throw new UpstreamFailed(`${reason}; the connector is now disconnected: connect it again`);
      }
      return forwarded.relay();
    },
  };
}
export type ProxyService = ReturnType<typeof createProxyService>;
