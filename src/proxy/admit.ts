import type { ConnectorRow } from "../connectors/repository";
import { connectorView, type ConnectorService } from "../connectors/service";
import { Conflict, InvalidToken, OAuthAuthorizationRequired } from "../http-errors/errors";
import type { Principal } from "../users/model";
import type { StreamLimits } from "./stream-limits";

/** A request the proxy took on: whose, to which connected connector, and the place it holds until the exchange is over. */
export type Admitted = {
  caller: Principal;
  row: ConnectorRow;
  /** Gives the place back (once, however often it is called). */
  release: () => void;
};

/**
 * The first step of the hot path (docs/interface.md §6): whether `caller`, already authenticated (entry.ts), may
 * send to connector `id` now — the token's connector, ownership, the connector's state — and a place among the
 * caller's and the connector's open exchanges (stream-limits.ts, 429 beyond).
 */
export function createAdmission({ connectors, limits }: { connectors: ConnectorService; limits: StreamLimits }) {
  return async function admit(caller: Principal, id: string): Promise<Admitted> {
    // [RFC 8707 §2](https://www.rfc-editor.org/rfc/rfc8707#section-2): an access token of this service's authorization server is for one resource: one connector's proxy URL, or one virtual server's MCP URL.
    if (caller.connector !== undefined && caller.connector !== id)
      throw new InvalidToken("This access token was issued for another connector's MCP proxy URL");
    // The same for one issued for a virtual server's MCP URL: its members are reached through the virtual server only
    // (virtual-servers/endpoint.ts drops the binding from its member calls), never at their own proxy URLs.
    if (caller.boundVirtualServer !== undefined)
      throw new InvalidToken("This access token was issued for a virtual server's MCP URL, not for a connector's proxy URL");
    let row = await connectors.owned(caller, id, true);
    // The cached row may be up to a second behind a connect on another replica: a refusal is checked in the store.
    if (row.state !== "connected") row = await connectors.owned(caller, id);
    if (row.state === "auth_required") {
      // The person connected it and must now approve at the server: the link to open, not "connect it" again.
      const link = connectorView(row).auth_request?.authorization_url;
      if (link) throw new OAuthAuthorizationRequired(`authorization pending: open ${link}`);
    }
    if (row.state !== "connected") {
      const why = row.disconnect_reason ? ` (${row.disconnect_reason})` : "";
      throw new Conflict(`The connector is ${row.state}${why}: connect it before sending MCP requests`);
    }
    return { caller, row, release: limits.open(caller.id, row.id) };
  };
}
