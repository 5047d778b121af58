import { and, asc, desc, eq, gt, lt, or, sql, type SQL } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Store, TransactionBody } from "../db/store";
import type { Reseal } from "../secrets/sealer";
import { SEALED_COLUMNS, sealContext } from "./sealing";
import type { ConnectorEventType, ConnectorState } from "./model";
import { connector_events as sqliteEvents, connector_eventsPg, connectors as sqliteConnectors, connectorsPg } from "./table";

export type ConnectorRow = typeof sqliteConnectors.$inferSelect;
export type ConnectorEventRow = typeof sqliteEvents.$inferSelect;
/** The columns a connection owns; only transitions.ts writes them. */
export type ConnectionColumns = Pick<
  ConnectorRow,
  "state" | "auth_method" | "disconnect_reason" | "headers" | "header_names" | "access_token" | "authorization_url" | "redirect_url"
>;
export type PageCursor = { created_at: number; id: string };

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
  writeConnection(id: string, columns: ConnectionColumns, at: number, whenState?: ConnectorState): Promise<ConnectorRow | undefined>;
  /** Connected managed (mcp+stdio) connectors: what the runtime should be running. */
  connectedManaged(): Promise<ConnectorRow[]>;
  countByState(): Promise<{ state: ConnectorState; count: number }[]>;
  /** False when there was no such connector. */
  delete(id: string): Promise<boolean>;
  /** Key rotation: every sealed value of this table re-sealed by `reseal`, inside the caller's transaction; how many. */
  resealAll(reseal: Reseal): TransactionBody<number>;
  /** Settings changed by the owner (PATCH: metadata, tool policy); undefined when there is no such connector. */
  writeSettings(id: string, settings: Partial<Pick<ConnectorRow, "metadata" | "tool_policy">>, at: number): Promise<ConnectorRow | undefined>;
  /** Events after `afterId`, oldest first (at most `limit`). */
  eventsAfter(afterId: number, limit: number): Promise<ConnectorEventRow[]>;
  /** The newest event's id, and the oldest kept (0 when there are none). */
  eventBounds(): Promise<{ newest: number; oldest: number }>;
  /** Forgets events older than `before`; how many. */
  deleteEventsBefore(before: number): Promise<number>;
};

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
export function createConnectorRepository(store: Store, clock: () => number = Date.now, onEvent: () => void = () => {}): ConnectorRepository {
  const { db } = store;
  const connectors = store.table(sqliteConnectors, connectorsPg);
  const events = store.table(sqliteEvents, connector_eventsPg);
  // Prepared once, and cached briefly: the MCP proxy looks a connector up on every request.
  const byId = store.prepareFirst<ConnectorRow>("connector_by_id", db.select().from(connectors).where(eq(connectors.id, sql.placeholder("id"))));
  const cache = createTtlCache<ConnectorRow>(CONNECTOR_CACHE_MS, 10_000, clock);
  return {
    insert: (row, maxPerOwner) =>
      store.transaction(function* (tx, lock) {
        yield lock(`connectors:${row.owner_id}`);
        const [owned] = yield tx.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(connectors).where(eq(connectors.owner_id, row.owner_id));
        if ((owned?.n ?? 0) >= maxPerOwner) return false;
        yield tx.insert(connectors).values(row);
        yield tx.insert(events).values(eventOf("connector.created", row, row.created_at));
        return true;
      }).then((inserted) => {
        if (inserted) onEvent();
        return inserted;
      }),
    findById: (id) => byId({ id }),
    findByIdCached: (id) => cache.readThrough(id, () => byId({ id })),
    async page(ownerId, limit, after) {
      const conditions: SQL[] = [];
      if (ownerId !== undefined) conditions.push(eq(connectors.owner_id, ownerId));
      if (after) {
        conditions.push(
          or(
            lt(connectors.created_at, after.created_at),
            and(eq(connectors.created_at, after.created_at), lt(connectors.id, after.id)),
          )!,
        );
      }
      return db
        .select()
        .from(connectors)
        .where(and(...conditions))
        .orderBy(desc(connectors.created_at), desc(connectors.id))
        .limit(limit);
    },
    async writeConnection(id, columns, at, whenState) {
      const where = whenState === undefined ? eq(connectors.id, id) : and(eq(connectors.id, id), eq(connectors.state, whenState));
      const row = await store.transaction(function* (tx) {
        const [written]: ConnectorRow[] = yield tx.update(connectors).set({ ...columns, updated_at: at }).where(where).returning();
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
        const [written]: ConnectorRow[] = yield tx.update(connectors).set({ ...settings, updated_at: at }).where(eq(connectors.id, id)).returning();
        if (written) yield tx.insert(events).values(eventOf("connector.updated", written, at));
        return written;
      });
      if (row) {
        cache.set(id, row);
        onEvent();
      }
      return row;
    },
    eventsAfter: async (afterId, limit) => db.select().from(events).where(gt(events.id, afterId)).orderBy(asc(events.id)).limit(limit),
    async eventBounds() {
      const [bounds] = await db
        .select({ newest: sql<number>`coalesce(max(${events.id}), 0)`.mapWith(Number), oldest: sql<number>`coalesce(min(${events.id}), 0)`.mapWith(Number) })
        .from(events);
      return bounds ?? { newest: 0, oldest: 0 };
    },
    deleteEventsBefore: async (before) => (await db.delete(events).where(lt(events.created_at, before)).returning({ id: events.id })).length,
    connectedManaged: async () =>
      db.select().from(connectors).where(and(eq(connectors.state, "connected"), sql`${connectors.url} LIKE 'mcp+stdio:%'`)),
    countByState: async () =>
      db.select({ state: connectors.state, count: sql<number>`count(*)`.mapWith(Number) }).from(connectors).groupBy(connectors.state),
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
    resealAll: (reseal) =>
      function* (tx) {
        let count = 0;
        const rows: ConnectorRow[] = yield tx.select().from(connectors);
        for (const row of rows) {
          const patch: Partial<Record<(typeof SEALED_COLUMNS)[number], string>> = {};
          for (const column of SEALED_COLUMNS) {
            const sealed = row[column];
            if (sealed === null) continue;
            patch[column] = reseal(sealed, sealContext(row.id, column));
            count++;
          }
          if (Object.keys(patch).length) yield tx.update(connectors).set(patch).where(eq(connectors.id, row.id));
        }
        cache.clear();
        return count;
      },
  };
}
