import { Conflict, NotFound, invalidField } from "../http-errors/errors";
import { UnsafeUrl, type UrlGuard } from "../security/url-guard";
import type { PresetCatalog } from "../presets/catalog";
import { createOpenedCache } from "../secrets/opened-cache";
import type { Sealer } from "../secrets/sealer";
import type { Principal } from "../users/model";
import { decodeCursor, encodeCursor } from "./cursor";
import {
  DEFAULT_PAGE_SIZE,
  type Connector,
  type ConnectorList,
  type CreateConnectorBody,
  type ListQuery,
} from "./model";
import type { ConnectorRepository, ConnectorRow } from "./repository";
import { parseConnectorUrl } from "./url";

export type ConnectorServiceDeps = {
  connectors: ConnectorRepository;
  presets: PresetCatalog;
  sealer: Sealer;
  clock: () => number;
  newId: () => string;
  urlGuard: UrlGuard;
  /** Called when a connector loses its connection or is deleted: its grant and deployment go with it. */
  onDisconnected?: (connectorId: string) => void;
};

/** Where each sealed column's context comes from: binds a ciphertext to its row and column. */
export const sealContext = (id: string, column: "headers" | "client_secret" | "access_token") =>
  `connectors/${id}/${column}`;

export const DISCONNECT_REQUESTED = "Disconnected at the user's request";

export function createConnectorService(deps: ConnectorServiceDeps) {
  const { connectors, presets, sealer, clock, newId } = deps;
  const openedHeaders = createOpenedCache<Record<string, string>>();

  function view(row: ConnectorRow): Connector {
    return {
      id: row.id,
      url: row.url,
      state: row.state,
      // Also shown while re-authorization is pending (e.g. the server asked for a wider scope).
      disconnect_reason: row.state === "disconnected" || row.state === "auth_required" ? row.disconnect_reason : null,
      metadata: row.metadata,
      auth_request:
        row.state === "auth_required" && row.authorization_url
          ? { type: "code", authorization_url: row.authorization_url }
          : null,
      preset: row.preset_url,
      header_names: row.header_names ?? [],
      created_at: new Date(row.created_at).toISOString(),
      updated_at: new Date(row.updated_at).toISOString(),
    };
  }

  /** The caller's connector; another user's is indistinguishable from a missing one (DESIGN.md). */
  function owned(caller: Principal, id: string, cached = false): ConnectorRow {
    const row = cached ? connectors.findByIdCached(id) : connectors.findById(id);
    if (!row || (row.owner_id !== caller.id && caller.role !== "admin")) throw new NotFound(`No connector ${id}`);
    return row;
  }

  function update(row: ConnectorRow, patch: Partial<ConnectorRow>): ConnectorRow {
    const updated = connectors.update(row.id, { ...patch, updated_at: clock() });
    if (!updated) throw new NotFound(`No connector ${row.id}`);
    return updated;
  }

  /** Credentials go with the connection: a later connect starts over (DESIGN.md). */
  function markDisconnected(row: ConnectorRow, reason: string): ConnectorRow {
    const updated = update(row, {
      state: "disconnected",
      disconnect_reason: reason,
      auth_method: "none",
      headers: null,
      header_names: null,
      access_token: null,
      authorization_url: null,
    });
    deps.onDisconnected?.(row.id);
    return updated;
  }

  return {
    view,
    owned,
    findRow: (id: string) => connectors.findById(id),
    connectedManaged: () => connectors.connectedManaged(),
    /** The preset a managed connector runs (presets can change between starts). */
    presetOf: (row: ConnectorRow) => presets.match(new URL(row.url)),

    create(caller: Principal, body: CreateConnectorBody): Connector {
      const parsed = parseConnectorUrl(body.url);
      if (!parsed.ok) throw invalidField("body.url", `"${body.url}" ${parsed.reason}`);
      if (parsed.url.protocol !== "mcp+stdio:") {
        try {
          deps.urlGuard.checkLiteral(parsed.url);
        } catch (e) {
          if (e instanceof UnsafeUrl) throw invalidField("body.url", e.message);
          throw e;
        }
      }
      // Spec 4 rule 1: a matching preset fills in credentials and metadata only where the caller gave none.
      const preset = body.match_preset === false ? undefined : presets.match(parsed.url);
      if (parsed.url.protocol === "mcp+stdio:" && !preset?.stdio) {
        throw invalidField("body.url", "an mcp+stdio:// URL must match a preset with a stdio configuration");
      }
      const useClient = body.client_id === undefined && preset?.client_id !== undefined;
      const clientId = useClient ? preset!.client_id! : body.client_id;
      const clientSecret = useClient ? preset!.client_secret : body.client_secret;
      const now = clock();
      const id = newId();
      const row: ConnectorRow = {
        id,
        owner_id: caller.id,
        url: parsed.url.href,
        state: "created",
        auth_method: "none",
        disconnect_reason: null,
        metadata: body.metadata ?? preset?.metadata ?? {},
        preset_url: preset?.url ?? null,
        client_id: clientId ?? null,
        client_secret: clientSecret === undefined ? null : sealer.seal(clientSecret, sealContext(id, "client_secret")),
        headers: null,
        header_names: null,
        access_token: null,
        authorization_url: null,
        redirect_url: null,
        created_at: now,
        updated_at: now,
      };
      connectors.insert(row);
      return view(row);
    },

    list(caller: Principal, query: ListQuery): ConnectorList {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      if (query.cursor !== undefined && !after) throw invalidField("query.cursor", "is not a cursor from this API");
      const rows = connectors.page(caller.role === "admin" ? undefined : caller.id, limit + 1, after);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        items: page.map(view),
        next_cursor: rows.length > limit && last ? encodeCursor(last) : null,
      };
    },

    get: (caller: Principal, id: string): Connector => view(owned(caller, id)),

    delete(caller: Principal, id: string): void {
      const row = owned(caller, id);
      if (!connectors.delete(row.id)) throw new NotFound(`No connector ${id}`);
      deps.onDisconnected?.(row.id);
    },

    disconnect(caller: Principal, id: string): Connector {
      const row = owned(caller, id);
      if (row.state === "created") throw new Conflict("The connector was never connected: connect it first");
      if (row.state === "disconnected") return view(row);
      return view(markDisconnected(row, DISCONNECT_REQUESTED));
    },

    markDisconnected,
    update,

    /**
     * For asynchronous failures (refresh, reconciliation, the proxy): reads the connector again and disconnects
     * it only if it is still connected, so a later connect or an earlier disconnect keeps its own reason.
     */
    disconnectIfConnected(id: string, reason: string): void {
      const current = connectors.findById(id);
      if (current?.state === "connected") markDisconnected(current, reason);
    },

    /** The connector's own OAuth client secret (from the request or its preset), opened. */
    clientSecret: (row: ConnectorRow): string | null =>
      row.client_secret ? sealer.open(row.client_secret, sealContext(row.id, "client_secret")) : null,

    /** The stored headers, opened, for the proxy. */
    storedHeaders(row: ConnectorRow): Record<string, string> {
      const sealed = row.headers;
      if (!sealed) return {};
      return openedHeaders(sealed, () => JSON.parse(sealer.open(sealed, sealContext(row.id, "headers"))) as Record<string, string>);
    },
  };
}
export type ConnectorService = ReturnType<typeof createConnectorService>;
