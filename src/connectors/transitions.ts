import { NotFound } from "../http-errors/errors";
import type { Logger } from "../observability/logger";
import type { Sealer } from "../secrets/sealer";
import { sealContext } from "./sealing";
import type { ConnectionColumns, ConnectorRepository, ConnectorRow, TargetColumns } from "./repository";

export type TransitionDeps = {
  connectorRows: ConnectorRepository;
  sealer: Sealer;
  clock: () => number;
  /** One line per change of state: what operators read to learn a connector went away, and why. */
  log: Logger;
  /**
   * A connection ended (the connector is now disconnected, waits for a new authorization, or is deleted): what
   * lives outside its row goes too, its OAuth grant and its managed deployment (connector-api/connections.ts).
   * Awaited before the transition returns, so that what a later step makes (a callback's new grant) is never what
   * an earlier transition's clean-up removes.
   */
  ended(row: ConnectorRow): Promise<void> | void;
};

/** What a connected connector sends to its server: nothing, the stored headers, or the OAuth grant's token. */
export type ConnectedWith =
  | { method: "none"; accessToken?: string }
  | { method: "headers"; headers: Record<string, string>; accessToken?: string }
  | { method: "oauth" };

export const DISCONNECT_REQUESTED = "Disconnected at the user's request";

/**
 * The connector state machine (docs/interface.md §4.3), and the only writer of a connector's
 * state and credential columns. Each transition writes the whole connection: the columns of the new state set,
 * every other one cleared, so credentials arrive with a connection and leave with it.
 *
 *   created ─connect─▶ auth_required ─callback─▶ connected ─disconnect / failure─▶ disconnected
 *         └──────────────connect (headers, open server, deployment)──▶┘        connect starts over from any state
 */
export function createTransitions(deps: TransitionDeps) {
  const { connectorRows: rows, sealer, clock, log } = deps;

  /** The log line of a transition: ids, states and the reason, never a credential (the reason is the user's text). */
  function logged(from: ConnectorRow, to: ConnectorRow | undefined) {
    const fields = {
      connector_id: from.id,
      owner_id: from.owner_id,
      from: from.state,
      to: to?.state ?? "deleted",
      auth_method: to?.auth_method ?? from.auth_method,
    };
    if (to?.state === "disconnected") log.warn("connector disconnected", { ...fields, reason: to.disconnect_reason });
    else
      log.info(
        to ? "connector state changed" : "connector deleted",
        to?.disconnect_reason ? { ...fields, reason: to.disconnect_reason } : fields,
      );
  }

  async function write(row: ConnectorRow, columns: ConnectionColumns & Partial<TargetColumns>): Promise<ConnectorRow> {
    const written = await rows.writeConnection(row.id, columns, clock());
    if (!written) throw new NotFound(`No connector ${row.id}`);
    logged(row, written);
    return written;
  }

  const seal = (row: ConnectorRow, column: "headers" | "access_token", value: string | undefined) =>
    value === undefined ? null : sealer.seal(value, sealContext(row.id, column));

  const disconnectedColumns = (reason: string, redirectUrl: string | null): ConnectionColumns => ({
    state: "disconnected",
    disconnect_reason: reason,
    auth_method: "none",
    headers: null,
    header_names: null,
    access_token: null,
    authorization_url: null,
    redirect_url: redirectUrl,
  });

  return {
    /** Connect succeeded: a handshake with these credentials, a ready deployment, or an OAuth callback. */
    connected(
      row: ConnectorRow,
      auth: ConnectedWith,
      redirectUrl: string | null,
      /** What the handshake found the server speaks (upstream/handshake.ts); left as it was when not given. */
      protocolVersions?: string[],
    ): Promise<ConnectorRow> {
      const headers = auth.method === "headers" ? auth.headers : undefined;
      return write(row, {
        state: "connected",
        ...(protocolVersions && { protocol_versions: protocolVersions }),
        disconnect_reason: null,
        auth_method: auth.method,
        headers: seal(row, "headers", headers && JSON.stringify(headers)),
        header_names: headers ? Object.keys(headers) : null,
        access_token: seal(row, "access_token", auth.method === "oauth" ? undefined : auth.accessToken),
        authorization_url: null,
        redirect_url: redirectUrl,
      });
    },

    /** The user must open `authorizationUrl`; `reason` says why when the connector was connected before. */
    async authRequired(
      row: ConnectorRow,
      authorizationUrl: string,
      redirectUrl: string | null,
      reason: string | null,
    ): Promise<ConnectorRow> {
      const written = await write(row, {
        state: "auth_required",
        disconnect_reason: reason,
        auth_method: "none",
        headers: null,
        header_names: null,
        access_token: null,
        authorization_url: authorizationUrl,
        redirect_url: redirectUrl,
      });
      await deps.ended(row);
      return written;
    },

    /** Disconnected, with the reason the user will read in `disconnect_reason` (docs/interface.md §4.3). */
    async disconnected(row: ConnectorRow, reason: string): Promise<ConnectorRow> {
      const written = await write(row, disconnectedColumns(reason, row.redirect_url));
      await deps.ended(row);
      return written;
    },

    /**
     * The connector now points at another server (PATCH `url`): the new target and the end of the connection in one
     * write, so no request is ever sent to the new URL with the old server's credentials. A connector never connected
     * stays `created`; any other is `disconnected` with `reason` and needs a new connect (docs/interface.md §4.3).
     */
    async moved(row: ConnectorRow, target: TargetColumns, reason: string): Promise<ConnectorRow> {
      const columns = disconnectedColumns(reason, row.redirect_url);
      const written = await write(
        row,
        row.state === "created"
          ? { ...columns, ...target, state: "created", disconnect_reason: null }
          : { ...columns, ...target },
      );
      await deps.ended(row);
      return written;
    },

    /**
     * For asynchronous failures (refresh, reconciliation, the proxy): disconnects only a connector that is still
     * connected, in one conditional write, so a later connect or an earlier disconnect keeps its own reason.
     */
    async disconnectIfConnected(id: string, reason: string): Promise<boolean> {
      const current = await rows.findById(id);
      if (current?.state !== "connected") return false;
      const written = await rows.writeConnection(id, disconnectedColumns(reason, current.redirect_url), clock(), "connected");
      if (written) {
        logged(current, written);
        await deps.ended(written);
      }
      return written !== undefined;
    },

    /** The connector and everything it had go (its grant and pending states by the database's cascade). */
    async deleted(row: ConnectorRow): Promise<void> {
      if (!(await rows.delete(row.id))) throw new NotFound(`No connector ${row.id}`);
      logged(row, undefined);
      await deps.ended(row);
    },
  };
}
export type Transitions = ReturnType<typeof createTransitions>;
