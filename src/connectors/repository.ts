import { and, asc, eq, gt, lt, sql } from "drizzle-orm";
import { hasRoom } from "../db/caps";
import { newestFirstPage, type PageCursor } from "../db/pages";
import { createTtlCache } from "../cache/ttl-cache";
import type { Store, TransactionBody } from "../db/store";
import type { ConnectorEventType, ConnectorState, SeenTool, ToolChange, ToolChangeDetail } from "./model";
import {
  connector_events as sqliteEvents,
  connector_eventsPg,
  connector_tools as sqliteTools,
  connector_toolsPg,
  connectors as sqliteConnectors,
  connectorsPg,
} from "./table";

export type ConnectorRow = typeof sqliteConnectors.$inferSelect;
export type ConnectorEventRow = typeof sqliteEvents.$inferSelect;
export type ToolPinRow = typeof sqliteTools.$inferSelect;
/** What PATCH and pinning change of a connector: never its state or credentials (transitions.ts writes those). */
export type ConnectorSettings = Partial<
  Pick<ConnectorRow, "metadata" | "tool_policy" | "tools_pinned_at" | "tool_changes" | "rate_limits">
>;
/** The columns a connection owns; only transitions.ts writes them. */
export type ConnectionColumns = Pick<
  ConnectorRow,
  | "state"
  | "auth_method"
  | "disconnect_reason"
  | "headers"
  | "header_names"
  | "access_token"
  | "authorization_url"
  | "redirect_url"
> &
  Partial<Pick<ConnectorRow, "protocol_versions">>;
/** Where a connection goes: written with the connection that ends when the connector moves to another server (PATCH url). */
export type TargetColumns = Pick<ConnectorRow, "url" | "preset_url" | "client_id" | "client_secret">;

/** Connectors, on either store. */
export type ConnectorRepository = {
  /** Inserts unless the owner already has `maxPerOwner` connectors (checked and written in one transaction). */
  insert(row: ConnectorRow, maxPerOwner: number): Promise<boolean>;
  findById(id: string): Promise<ConnectorRow | undefined>;
  /** For the proxy: the row as of at most CONNECTOR_CACHE_MS ago (this process's own writes show at once). */
  findByIdCached(id: string): Promise<ConnectorRow | undefined>;
  /** Newest first; `ownerId` undefined lists every owner's (administrators). */
  page(ownerId: string | undefined, limit: number, after: PageCursor | undefined): Promise<ConnectorRow[]>;
  /** Writes a connection; with `whenState`, only while the row is still in that state. Undefined: nothing written. */
  writeConnection(
    id: string,
    columns: ConnectionColumns & Partial<TargetColumns>,
    at: number,
    whenState?: ConnectorState,
  ): Promise<ConnectorRow | undefined>;
  /** Connected managed (mcp+stdio) connectors: what the runtime should be running. */
  connectedManaged(): Promise<ConnectorRow[]>;
  countByState(): Promise<{ state: ConnectorState; count: number }[]>;
  /** False when there was no such connector. */
  delete(id: string): Promise<boolean>;
  /** Settings changed by the owner (PATCH: metadata, tool policy); undefined when there is no such connector. */
  writeSettings(id: string, settings: ConnectorSettings, at: number): Promise<ConnectorRow | undefined>;
  /** The connector's tool pins, as of at most CONNECTOR_CACHE_MS ago (this process's own writes show at once). */
  toolPins(connectorId: string): Promise<ToolPinRow[]>;
  /**
   * A listing's tools (server names and digests): new ones pinned, changed ones noted. Until a whole listing was seen
   * (`complete`: a page without a next cursor) what is seen is approved as it is. Returns the connector when its
   * tool_changes changed (an event was written), else undefined.
   */
  recordToolPins(connectorId: string, seen: SeenTool[], complete: boolean, at: number): Promise<ConnectorRow | undefined>;
  /** The tools whose definition is not the approved one, with both definitions (read afresh, never cached). */
  toolChanges(connectorId: string): Promise<ToolChangeDetail[]>;
  /** Approves the current definitions of `names` (all changed tools when undefined); the connector, or undefined if none. */
  approveToolPins(connectorId: string, names: string[] | undefined, at: number): Promise<ConnectorRow | undefined>;
  /** Events after `afterId`, oldest first (at most `limit`). */
  eventsAfter(afterId: number, limit: number): Promise<ConnectorEventRow[]>;
  /** The newest event's id, and the oldest kept (0 when there are none). */
  eventBounds(): Promise<{ newest: number; oldest: number }>;
  /** Forgets events older than `before`; how many. */
  deleteEventsBefore(before: number): Promise<number>;
};

/** Pins whose definition is not the approved one, by name. */
const changedPins = (pins: ToolPinRow[]) =>
  pins.filter((pin) => pin.digest !== pin.approved_digest).sort((a, b) => a.name.localeCompare(b.name));

const changeOf = (pin: ToolPinRow): ToolChange => ({
  name: pin.name,
  change: pin.approved_digest === null ? "added" : "changed",
  detected_at: new Date(pin.changed_at ?? pin.first_seen_at).toISOString(),
});

/** What a listing changes of a known pin: a new digest with its definition, or a definition it lacked; else nothing. */
function pinUpdate(
  pin: ToolPinRow,
  digest: string,
  definition: SeenTool["definition"],
  at: number,
): Partial<ToolPinRow> | undefined {
  if (pin.digest !== digest) return { digest, definition, changed_at: at };
  if (pin.definition !== null) return undefined;
  return { definition, ...(pin.approved_digest === digest && { approved_definition: definition }) };
}

/** How long a connector row read for the proxy may be reused (see cache/ttl-cache.ts). */
export const CONNECTOR_CACHE_MS = 1000;

/** The event a change makes: what a list of connectors needs to show, no credential. */
function eventOf(type: ConnectorEventType, row: ConnectorRow, at: number) {
  return {
    type,
    connector_id: row.id,
    owner_id: row.owner_id,
    data: {
      id: row.id,
      owner_id: row.owner_id,
      name: row.metadata.name ?? null,
      url: row.url,
      state: row.state,
      disconnect_reason: row.disconnect_reason,
      updated_at: new Date(row.updated_at).toISOString(),
    },
    created_at: at,
  };
}

/** `onEvent`: told after an event was committed, so this process's readers need not wait for their next poll. */
export function createConnectorRepository(
  store: Store,
  clock: () => number = Date.now,
  onEvent: () => void = () => {},
): ConnectorRepository {
  const { db } = store;
  const connectors = store.table(sqliteConnectors, connectorsPg);
  const events = store.table(sqliteEvents, connector_eventsPg);
  const tools = store.table(sqliteTools, connector_toolsPg);
  const pinCache = createTtlCache<ToolPinRow[]>(CONNECTOR_CACHE_MS, 10_000, clock);

  /** The one UPDATE of a connector's settings, with its event, inside a transaction. */
  function* updateSettings(
    tx: Parameters<TransactionBody<unknown>>[0],
    id: string,
    settings: ConnectorSettings,
    at: number,
  ): Generator<unknown, ConnectorRow | undefined, any> {
    const [written]: ConnectorRow[] = yield tx
      .update(connectors)
      .set({ ...settings, updated_at: at })
      .where(eq(connectors.id, id))
      .returning();
    if (written) yield tx.insert(events).values(eventOf("connector.updated", written, at));
    return written;
  }

  /** The tools whose definition is not the approved one, as the connector's view shows them. */
  const changesOf = (pins: ToolPinRow[]): ToolChange[] => changedPins(pins).map(changeOf);
  const sameChanges = (a: ToolChange[] | null, b: ToolChange[]) => JSON.stringify(a ?? []) === JSON.stringify(b);

  /** After a settings or pin write: this process reads the pins and the row afresh, and its event readers hear of it. */
  function written(id: string, row: ConnectorRow | undefined) {
    pinCache.delete(id);
    if (row) {
      cache.set(id, row);
      onEvent();
    }
    return row;
  }
  // Prepared once, and cached briefly: the MCP proxy looks a connector up on every request.
  const byId = store.prepareFirst<ConnectorRow>(
    "connector_by_id",
    db
      .select()
      .from(connectors)
      .where(eq(connectors.id, sql.placeholder("id"))),
  );
  const cache = createTtlCache<ConnectorRow>(CONNECTOR_CACHE_MS, 10_000, clock);
  return {
    insert: (row, maxPerOwner) =>
      store
        .transaction(function* (tx, lock) {
          if (!(yield* hasRoom(tx, lock, connectors, connectors.owner_id, row.owner_id, maxPerOwner))) return false;
          yield tx.insert(connectors).values(row);
          yield tx.insert(events).values(eventOf("connector.created", row, row.created_at));
          return true;
        })
        .then((inserted) => {
          if (inserted) onEvent();
          return inserted;
        }),
    findById: (id) => byId({ id }),
    findByIdCached: (id) => cache.readThrough(id, () => byId({ id })),
    page: (ownerId, limit, after) => newestFirstPage(db, connectors, ownerId, limit, after),
    async writeConnection(id, columns, at, whenState) {
      const where = whenState === undefined ? eq(connectors.id, id) : and(eq(connectors.id, id), eq(connectors.state, whenState));
      const row = await store.transaction(function* (tx) {
        const [written]: ConnectorRow[] = yield tx
          .update(connectors)
          .set({ ...columns, updated_at: at })
          .where(where)
          .returning();
        if (written) yield tx.insert(events).values(eventOf("connector.updated", written, at));
        return written;
      });
      if (row) {
        cache.set(id, row);
        onEvent();
      } else cache.delete(id);
      return row;
    },
    async writeSettings(id, settings, at) {
      const row = await store.transaction(function* (tx) {
        return yield* updateSettings(tx, id, settings, at);
      });
      return written(id, row);
    },
    toolPins: async (connectorId) =>
      (await pinCache.readThrough(connectorId, () => db.select().from(tools).where(eq(tools.connector_id, connectorId)))) ?? [],
    async recordToolPins(connectorId, seen, complete, at) {
      const row = await store.transaction(function* (tx, lock) {
        yield lock(`connector_tools:${connectorId}`);
        const [connector]: ConnectorRow[] = yield tx.select().from(connectors).where(eq(connectors.id, connectorId));
        if (!connector) return undefined;
        const baseline = connector.tools_pinned_at === null;
        const pins: ToolPinRow[] = yield tx.select().from(tools).where(eq(tools.connector_id, connectorId));
        const known: Record<string, ToolPinRow> = Object.fromEntries(pins.map((pin) => [pin.name, pin]));
        for (const { name, digest, definition } of seen) {
          const pin = Object.hasOwn(known, name) ? known[name] : undefined;
          if (!pin) {
            const added: ToolPinRow = {
              connector_id: connectorId,
              name,
              digest,
              approved_digest: baseline ? digest : null,
              definition,
              approved_definition: baseline ? definition : null,
              first_seen_at: at,
              changed_at: baseline ? null : at,
            };
            yield tx.insert(tools).values(added).onConflictDoNothing();
            known[name] = added;
            continue;
          }
          // Pins written before definitions were kept get theirs now: the approved one too, while it is the same.
          const update = pinUpdate(pin, digest, definition, at);
          if (!update) continue;
          yield tx
            .update(tools)
            .set(update)
            .where(and(eq(tools.connector_id, connectorId), eq(tools.name, name)));
          known[name] = { ...pin, ...update };
        }
        const changes = changesOf(Object.values(known));
        const settings: ConnectorSettings = {
          ...(baseline && complete && { tools_pinned_at: at }),
          ...(!sameChanges(connector.tool_changes, changes) && { tool_changes: changes }),
        };
        if (Object.keys(settings).length === 0) return undefined;
        return yield* updateSettings(tx, connectorId, settings, at);
      });
      return written(connectorId, row);
    },
    async approveToolPins(connectorId, names, at) {
      const row = await store.transaction(function* (tx, lock) {
        yield lock(`connector_tools:${connectorId}`);
        const pins: ToolPinRow[] = yield tx.select().from(tools).where(eq(tools.connector_id, connectorId));
        const wanted = names && new Set(names);
        for (const pin of pins) {
          if (pin.digest === pin.approved_digest || (wanted && !wanted.has(pin.name))) continue;
          yield tx
            .update(tools)
            .set({ approved_digest: pin.digest, approved_definition: pin.definition })
            .where(and(eq(tools.connector_id, connectorId), eq(tools.name, pin.name)));
          pin.approved_digest = pin.digest;
          pin.approved_definition = pin.definition;
        }
        return yield* updateSettings(tx, connectorId, { tool_changes: changesOf(pins) }, at);
      });
      return written(connectorId, row);
    },
    async toolChanges(connectorId) {
      const pins = await db.select().from(tools).where(eq(tools.connector_id, connectorId));
      return changedPins(pins).map((pin) => ({ ...changeOf(pin), approved: pin.approved_definition, current: pin.definition }));
    },
    eventsAfter: async (afterId, limit) =>
      db.select().from(events).where(gt(events.id, afterId)).orderBy(asc(events.id)).limit(limit),
    async eventBounds() {
      const [bounds] = await db
        .select({
          newest: sql<number>`coalesce(max(${events.id}), 0)`.mapWith(Number),
          oldest: sql<number>`coalesce(min(${events.id}), 0)`.mapWith(Number),
        })
        .from(events);
      return bounds ?? { newest: 0, oldest: 0 };
    },
    deleteEventsBefore: async (before) =>
      (await db.delete(events).where(lt(events.created_at, before)).returning({ id: events.id })).length,
    connectedManaged: async () =>
      db
        .select()
        .from(connectors)
        .where(and(eq(connectors.state, "connected"), sql`${connectors.url} LIKE 'mcp+stdio:%'`)),
    countByState: async () =>
      db
        .select({ state: connectors.state, count: sql<number>`count(*)`.mapWith(Number) })
        .from(connectors)
        .groupBy(connectors.state),
    async delete(id) {
      cache.delete(id);
      const now = clock();
      const deleted = await store.transaction(function* (tx) {
        const [row]: ConnectorRow[] = yield tx.delete(connectors).where(eq(connectors.id, id)).returning();
        if (row) yield tx.insert(events).values(eventOf("connector.deleted", { ...row, updated_at: now }, now));
        return row !== undefined;
      });
      if (deleted) onEvent();
      return deleted;
    },
  };
}
