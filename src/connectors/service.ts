import type { FetchLike } from "../app";
import {
  Conflict,
  NotFound,
  UpstreamFailed,
  UpstreamRejectedCredentials,
  UpstreamTimeout,
  invalidField,
  type AppError,
} from "../http-errors/errors";
import { UnsafeUrl, type UrlGuard } from "../security/url-guard";
import { mcpHandshake, type HandshakeResult } from "../upstream/handshake";
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
  urlGuard: UrlGuard;
  /** A fetch that applies the URL guard to every request to an upstream. */
  upstreamFetch: FetchLike;
  handshakeTimeoutMs: number;
};

/** Where each sealed column's context comes from: binds a ciphertext to its row and column. */
export const sealContext = (id: string, column: "headers" | "client_secret" | "access_token") =>
  `connectors/${id}/${column}`;

export const DISCONNECT_REQUESTED = "Disconnected at the user's request";

/** What a failed connect-time handshake leaves as `disconnect_reason`, and what connect answers. */
function handshakeFailure(result: Exclude<HandshakeResult, { ok: true }>, withHeaders: boolean): { reason: string; error: AppError } {
  switch (result.kind) {
    case "unauthorized": {
      const answer = `HTTP ${result.status} ${result.status === 401 ? "Unauthorized" : "Forbidden"}`;
      if (withHeaders) {
        const reason = `The MCP server refused the supplied headers (${answer})`;
        return { reason, error: new UpstreamRejectedCredentials(`${reason}; the connector is disconnected`) };
      }
      const reason = `The MCP server requires authorization (${answer}) and this version cannot run its OAuth flow; connect with \`headers\` instead`;
      return { reason, error: new Conflict(reason) };
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

export function createConnectorService(deps: ConnectorServiceDeps) {
  const { connectors, presets, sealer, clock, newId } = deps;
  // Opened headers by sealed value: the proxy opens each connector's once, not on every request.
  const openedHeaders = new Map<string, Record<string, string>>();

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
    return update(row, {
      state: "disconnected",
      disconnect_reason: reason,
      headers: null,
      header_names: null,
      access_token: null,
      authorization_url: null,
    });
  }

  return {
    view,
    owned,

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

    /**
     * Connect starts over from any state (DESIGN.md): the MCP handshake runs with the given headers
     * (or none); only headers the server accepted are stored.
     */
    async connect(caller: Principal, id: string, body: ConnectBody): Promise<Connector> {
      const row = owned(caller, id);
      const redirectUrl =
        body.redirect_url === undefined ? null : assertAllowedRedirect(body.redirect_url, deps.allowedRedirectOrigins());
      const headers = body.headers ?? {};
      assertStorableHeaders(headers);
      if (row.url.startsWith("mcp+stdio:")) {
        throw new Conflict("Managed stdio connectors cannot be connected by this version of the service yet");
      }
      const withHeaders = Object.keys(headers).length > 0;
      const result = await mcpHandshake(new URL(row.url), { fetch: deps.upstreamFetch, headers, timeoutMs: deps.handshakeTimeoutMs });
      if (!result.ok) {
        const { reason, error } = handshakeFailure(result, withHeaders);
        markDisconnected(owned(caller, id), reason);
        throw error;
      }
      return view(
        update(owned(caller, id), {
          state: "connected",
          disconnect_reason: null,
          headers: withHeaders ? sealer.seal(JSON.stringify(headers), sealContext(row.id, "headers")) : null,
          header_names: withHeaders ? Object.keys(headers) : null,
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
      return view(markDisconnected(row, DISCONNECT_REQUESTED));
    },

    markDisconnected,

    /** The stored headers, opened, for the proxy. */
    storedHeaders(row: ConnectorRow): Record<string, string> {
      if (!row.headers) return {};
      let opened = openedHeaders.get(row.headers);
      if (!opened) {
        opened = JSON.parse(sealer.open(row.headers, sealContext(row.id, "headers"))) as Record<string, string>;
        if (openedHeaders.size >= 1000) openedHeaders.delete(openedHeaders.keys().next().value!);
        openedHeaders.set(row.headers, opened);
      }
      return opened;
    },
  };
}
export type ConnectorService = ReturnType<typeof createConnectorService>;
