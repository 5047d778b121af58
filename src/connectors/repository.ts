import { and, desc, eq, lt, or, sql, type SQL } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Store, TransactionBody } from "../db/store";
import type { Reseal } from "../secrets/sealer";
import { SEALED_COLUMNS, sealContext } from "./sealing";
import type { ConnectorState } from "./model";
import { connectors as sqliteConnectors, connectorsPg } from "./table";

export type ConnectorRow = typeof sqliteConnectors.$inferSelect;
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
};

/** How long a connector row read for the proxy may be reused (see cache/ttl-cache.ts). */
export const CONNECTOR_CACHE_MS = 1000;

export function createConnectorRepository(store: Store, clock: () => number = Date.now): ConnectorRepository {
  const { db } = store;
  const connectors = store.table(sqliteConnectors, connectorsPg);
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
        return true;
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
      const [row] = await db.update(connectors).set({ ...columns, updated_at: at }).where(where).returning();
      if (row) cache.set(id, row);
      else cache.delete(id);
      return row;
    },
    connectedManaged: async () =>
      db.select().from(connectors).where(and(eq(connectors.state, "connected"), sql`${connectors.url} LIKE 'mcp+stdio:%'`)),
    countByState: async () =>
      db.select({ state: connectors.state, count: sql<number>`count(*)`.mapWith(Number) }).from(connectors).groupBy(connectors.state),
    async delete(id) {
      cache.delete(id);
      return (await db.delete(connectors).where(eq(connectors.id, id)).returning({ id: connectors.id })).length === 1;
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
