import type { Metadata } from "../presets/model";
import { Conflict, NotFound, invalidField } from "../http-errors/errors";
import { UnsafeUrl } from "../http/fetch";
import type { PresetCatalog } from "../presets/catalog";
import type { Preset } from "../presets/model";
import type { Sealer } from "../secrets/sealer";
import type { UrlGuard } from "../security/url-guard";
import { parseConnectorUrl } from "../urls/server-url";
import type { Principal } from "../users/model";
import { sealContext } from "./sealing";
import { readPage, type ListQuery } from "../http/pages";
import type { RateLimits } from "../rate-limits/model";
import { type Connector, type ConnectorList, type CreateConnectorBody, type ToolChangeList, type ToolPolicy } from "./model";
import { checkToolPolicy } from "./tool-policy";
import type { ConnectorRepository, ConnectorRow, TargetColumns } from "./repository";

export type ConnectorServiceDeps = {
  connectorRows: ConnectorRepository;
  presets: PresetCatalog;
  sealer: Sealer;
  clock: () => number;
  newId: () => string;
  urlGuard: UrlGuard;
  /** CONNECTOR__MAX_PER_USER. */
  maxPerUser: number;
};

/** The connector as the API shows it: never a secret, a token or a header value (docs/interface.md §4.1). */
export function connectorView(row: ConnectorRow): Connector {
  return {
    id: row.id,
    owner_id: row.owner_id,
    url: row.url,
    state: row.state,
    // Also shown while re-authorization is pending (e.g. the server asked for a wider scope).
    disconnect_reason: row.state === "disconnected" || row.state === "auth_required" ? row.disconnect_reason : null,
    metadata: row.metadata,
    // Checked when discovered (oauth-client/discovery.ts); one stored before that check is not shown rather than fail the listing.
    auth_request:
      row.state === "auth_required" &&
      row.authorization_url &&
      /^https?:\/\//i.test(row.authorization_url) &&
      URL.canParse(row.authorization_url)
        ? { type: "code", authorization_url: row.authorization_url }
        : null,
    preset: row.preset_url,
    header_names: row.header_names ?? [],
    tool_policy: row.tool_policy,
    tools_pinned_at: row.tools_pinned_at === null ? null : new Date(row.tools_pinned_at).toISOString(),
    tool_changes: row.tool_changes ?? [],
    protocol_versions: row.protocol_versions ?? null,
    rate_limits: row.rate_limits,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export const isManaged = (row: ConnectorRow) => row.url.startsWith("mcp+stdio:");

/** Creating, reading and listing connectors. Their connection changes in transitions.ts only. */
export function createConnectorService(deps: ConnectorServiceDeps) {
  const { connectorRows: rows, presets, sealer, clock, newId } = deps;

  /** The caller's connector; another user's is indistinguishable from a missing one (docs/interface.md §3). */
  async function owned(caller: Principal, id: string, cached = false): Promise<ConnectorRow> {
    const row = cached ? await rows.findByIdCached(id) : await rows.findById(id);
    if (!row || (row.owner_id !== caller.id && caller.role !== "admin")) throw new NotFound(`No connector ${id}`);
    return row;
  }

  /** A connector URL as creation checks it (docs/interface.md §4.2), and the preset it matches (when `matchPreset`). */
  function checkUrl(raw: string, matchPreset: boolean): { url: URL; preset: Preset | undefined } {
    const parsed = parseConnectorUrl(raw);
    if (!parsed.ok) throw invalidField("body.url", `"${raw}" ${parsed.reason}`);
    if (parsed.url.protocol !== "mcp+stdio:") {
      try {
        deps.urlGuard.checkLiteral(parsed.url);
      } catch (e) {
        if (e instanceof UnsafeUrl) throw invalidField("body.url", e.message);
        throw e;
      }
    }
    const preset = matchPreset ? presets.match(parsed.url) : undefined;
    if (parsed.url.protocol === "mcp+stdio:" && !preset?.stdio) {
      throw invalidField("body.url", "an mcp+stdio:// URL must match a preset with a stdio configuration");
    }
    return { url: parsed.url, preset };
  }

  return {
    owned,
    get: async (caller: Principal, id: string): Promise<Connector> => connectorView(await owned(caller, id)),
    /** The first `limit` connectors of a user (their deletion takes them a page at a time). */
    firstOf: (ownerId: string, limit: number) => rows.page(ownerId, limit, undefined),

    /** Approves the current definitions of the named tools (all changed ones without names): they show again under strict pinning. */
    async approveTools(caller: Principal, id: string, names: string[] | undefined): Promise<Connector> {
      await owned(caller, id);
      const written = await rows.approveToolPins(id, names, clock());
      if (!written) throw new NotFound(`No connector ${id}`);
      return connectorView(written);
    },

    /** The tools `tool_changes` names, each with its approved and its current definition, to compare before approving. */
    async toolChanges(caller: Principal, id: string): Promise<ToolChangeList> {
      await owned(caller, id);
      return { items: await rows.toolChanges(id) };
    },

    /**
     * PATCH's settings: `metadata` fields replace the stored ones (the others stay); `tool_policy` replaces the policy,
     * `rate_limits` the limits (null: none).
     */
    async updateSettings(
      caller: Principal,
      id: string,
      settings: { metadata?: Metadata; tool_policy?: ToolPolicy | null; rate_limits?: RateLimits | null },
    ): Promise<Connector> {
      const row = await owned(caller, id);
      if (settings.tool_policy) checkToolPolicy(settings.tool_policy);
      const written = await rows.writeSettings(
        id,
        {
          ...(settings.metadata !== undefined && { metadata: { ...row.metadata, ...settings.metadata } }),
          ...(settings.tool_policy !== undefined && { tool_policy: settings.tool_policy }),
          ...(settings.rate_limits !== undefined && { rate_limits: settings.rate_limits }),
        },
        clock(),
      );
      if (!written) throw new NotFound(`No connector ${id}`);
      return connectorView(written);
    },

    /**
     * PATCH `url` (docs/interface.md §4.2): the new URL passes the rules of a creation, and where the connection will
     * go. The preset is matched again. The connector's OAuth client credentials stay only while the server keeps its
     * origin: a client secret is never sent to another server's authorization server; a preset of the new URL supplies
     * its own, as at creation. Undefined when the URL is the one stored (nothing moves).
     */
    async planMove(
      caller: Principal,
      id: string,
      raw: string,
    ): Promise<{ row: ConnectorRow; target: TargetColumns } | undefined> {
      const row = await owned(caller, id);
      const { url, preset } = checkUrl(raw, true);
      if (url.href === row.url) return undefined;
      const sameOrigin = URL.canParse(row.url) && new URL(row.url).origin === url.origin && url.origin !== "null";
      const usePreset = preset?.client_id !== undefined;
      return {
        row,
        target: {
          url: url.href,
          preset_url: preset?.url ?? null,
          client_id: usePreset ? preset!.client_id! : sameOrigin ? row.client_id : null,
          client_secret: usePreset
            ? preset!.client_secret === undefined
              ? null
              : sealer.seal(preset!.client_secret, sealContext(id, "client_secret"))
            : sameOrigin
              ? row.client_secret
              : null,
        },
      };
    },

    async create(caller: Principal, body: CreateConnectorBody): Promise<Connector> {
      // docs/interface.md §4.2: a matching preset fills in credentials and metadata only where the caller gave none.
      const { url, preset } = checkUrl(body.url, body.match_preset !== false);
      const useClient = body.client_id === undefined && preset?.client_id !== undefined;
      const clientId = useClient ? preset!.client_id! : body.client_id;
      const clientSecret = useClient ? preset!.client_secret : body.client_secret;
      const now = clock();
      const id = newId();
      const row: ConnectorRow = {
        id,
        owner_id: caller.id,
        url: url.href,
        state: "created",
        auth_method: "none",
        disconnect_reason: null,
        metadata: body.metadata ?? preset?.metadata ?? {},
        preset_url: preset?.url ?? null,
        client_id: clientId ?? null,
        client_secret: clientSecret === undefined ? null : sealer.seal(clientSecret, sealContext(id, "client_secret")),
        headers: null,
        header_names: null,
        tool_policy: null,
        tools_pinned_at: null,
        tool_changes: null,
        protocol_versions: null,
        rate_limits: body.rate_limits ?? null,
        access_token: null,
        authorization_url: null,
        redirect_url: null,
        created_at: now,
        updated_at: now,
      };
      if (!(await rows.insert(row, deps.maxPerUser))) {
        throw new Conflict(
          `You have ${deps.maxPerUser} connectors, the most a user may have (CONNECTOR__MAX_PER_USER): delete one first`,
        );
      }
      return connectorView(row);
    },

    list: (caller: Principal, query: ListQuery): Promise<ConnectorList> =>
      readPage(
        query,
        (limit, after) => rows.page(caller.role === "admin" ? undefined : caller.id, limit, after),
        (page) => page.map(connectorView),
      ),
  };
}
export type ConnectorService = ReturnType<typeof createConnectorService>;
