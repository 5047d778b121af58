import { Conflict, NotFound, invalidField } from "../http-errors/errors";
import type { PresetCatalog } from "../presets/catalog";
import type { Sealer } from "../secrets/sealer";
import type { Principal } from "../users/model";
import { decodeCursor, encodeCursor } from "./cursor";
import { assertStorableHeaders } from "./headers";
import {
  DEFAULT_PAGE_SIZE,
  type ConnectBody,
  type Connector,
  type ConnectorList,
  type CreateConnectorBody,
  type ListQuery,
} from "./model";
import { assertAllowedRedirect } from "./redirect-url";
import type { ConnectorRepository, ConnectorRow } from "./repository";
import { parseConnectorUrl } from "./url";

export type ConnectorServiceDeps = {
  connectors: ConnectorRepository;
  presets: PresetCatalog;
  sealer: Sealer;
  clock: () => number;
  newId: () => string;
  /** Origins `redirect_url` may point at (the public URL's and OAUTH__ALLOWED_REDIRECT_ORIGINS). */
  allowedRedirectOrigins: () => readonly string[];
};

/** Where each sealed column's context comes from: binds a ciphertext to its row and column. */
export const sealContext = (id: string, column: "headers" | "client_secret" | "access_token") =>
  `connectors/${id}/${column}`;

export const DISCONNECT_REQUESTED = "Disconnected at the user's request";

export function createConnectorService(deps: ConnectorServiceDeps) {
  const { connectors, presets, sealer, clock, newId } = deps;

  function view(row: ConnectorRow): Connector {
    return {
      id: row.id,
      url: row.url,
      state: row.state,
      disconnect_reason: row.state === "disconnected" ? row.disconnect_reason : null,
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
  function owned(caller: Principal, id: string): ConnectorRow {
    const row = connectors.findById(id);
    if (!row || (row.owner_id !== caller.id && caller.role !== "admin")) throw new NotFound(`No connector ${id}`);
    return row;
  }

  function update(row: ConnectorRow, patch: Partial<ConnectorRow>): ConnectorRow {
    const updated = connectors.update(row.id, { ...patch, updated_at: clock() });
    if (!updated) throw new NotFound(`No connector ${row.id}`);
    return updated;
  }

  return {
    view,
    owned,

    create(caller: Principal, body: CreateConnectorBody): Connector {
      const parsed = parseConnectorUrl(body.url);
      if (!parsed.ok) throw invalidField("body.url", `"${body.url}" ${parsed.reason}`);
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
    },

    connect(caller: Principal, id: string, body: ConnectBody): Connector {
      const row = owned(caller, id);
      const redirectUrl =
        body.redirect_url === undefined ? null : assertAllowedRedirect(body.redirect_url, deps.allowedRedirectOrigins());
      if (body.headers !== undefined) assertStorableHeaders(body.headers);
      if (row.url.startsWith("mcp+stdio:")) {
        throw new Conflict("Managed stdio connectors cannot be connected by this version of the service yet");
      }
      if (body.headers === undefined || Object.keys(body.headers).length === 0) {
        throw new Conflict(
          "This version of the service cannot run the OAuth authorization flow yet: connect with `headers` holding the server's credentials",
        );
      }
      return view(
        update(row, {
          state: "connected",
          disconnect_reason: null,
          headers: sealer.seal(JSON.stringify(body.headers), sealContext(row.id, "headers")),
          header_names: Object.keys(body.headers),
          access_token:
            body.accessToken === undefined ? null : sealer.seal(body.accessToken, sealContext(row.id, "access_token")),
          authorization_url: null,
          redirect_url: redirectUrl,
        }),
      );
    },

    disconnect(caller: Principal, id: string): Connector {
      const row = owned(caller, id);
      if (row.state === "created") throw new Conflict("The connector was never connected: connect it first");
      if (row.state === "disconnected") return view(row);
      // Credentials go with the connection: a later connect starts over (DESIGN.md).
      return view(
        update(row, {
          state: "disconnected",
          disconnect_reason: DISCONNECT_REQUESTED,
          headers: null,
          header_names: null,
          access_token: null,
          authorization_url: null,
        }),
      );
    },

    /** The stored headers, opened, for the proxy. */
    storedHeaders(row: ConnectorRow): Record<string, string> {
      return row.headers ? (JSON.parse(sealer.open(row.headers, sealContext(row.id, "headers"))) as Record<string, string>) : {};
    },
  };
}
export type ConnectorService = ReturnType<typeof createConnectorService>;
