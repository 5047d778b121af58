import { and, desc, eq, lt, or, sql, type SQL } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Db } from "../db/open";
import { connectors } from "../db/schema";

export type ConnectorRow = typeof connectors.$inferSelect;
export type ConnectorPatch = Partial<Omit<ConnectorRow, "id" | "owner_id" | "created_at">> & { updated_at: number };
export type PageCursor = { created_at: number; id: string };

/** How long a connector row read for the proxy may be reused (see cache/ttl-cache.ts). */
export const CONNECTOR_CACHE_MS = 1000;

export function createConnectorRepository(db: Db, clock: () => number = Date.now) {
  // Prepared once, and cached briefly: the MCP proxy looks a connector up on every request.
  const byId = db.select().from(connectors).where(eq(connectors.id, sql.placeholder("id"))).prepare();
  const cache = createTtlCache<ConnectorRow>(CONNECTOR_CACHE_MS, 10_000, clock);
  return {
    insert: (row: ConnectorRow) => db.insert(connectors).values(row).run(),
    findById: (id: string): ConnectorRow | undefined => byId.get({ id }),
    /** For the proxy: the row as of at most CONNECTOR_CACHE_MS ago (this process's own writes show at once). */
    findByIdCached: (id: string): ConnectorRow | undefined => cache.readThrough(id, () => byId.get({ id })),
    /** Newest first; `ownerId` undefined lists every owner's (administrators). */
    page(ownerId: string | undefined, limit: number, after: PageCursor | undefined): ConnectorRow[] {
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
        .limit(limit)
        .all();
    },
    update(id: string, patch: ConnectorPatch): ConnectorRow | undefined {
      const row = db.update(connectors).set(patch).where(eq(connectors.id, id)).returning().get();
      if (row) cache.set(id, row);
      else cache.delete(id);
      return row;
    },
    /** Connected managed (mcp+stdio) connectors: what the runtime should be running. */
    connectedManaged: () =>
      db.select().from(connectors).where(and(eq(connectors.state, "connected"), sql`${connectors.url} LIKE 'mcp+stdio:%'`)).all(),
    countByState: () =>
      db.select({ state: connectors.state, count: sql<number>`count(*)` }).from(connectors).groupBy(connectors.state).all(),
    delete: (id: string) => db.delete(connectors).where(eq(connectors.id, id)).returning({ id: connectors.id }).all().length === 1,
  };
}
export type ConnectorRepository = ReturnType<typeof createConnectorRepository>;
