import { and, desc, eq, lt, or, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/open";
import { connectors } from "../db/schema";

export type ConnectorRow = typeof connectors.$inferSelect;
export type ConnectorPatch = Partial<Omit<ConnectorRow, "id" | "owner_id" | "created_at">> & { updated_at: number };
export type PageCursor = { created_at: number; id: string };

export function createConnectorRepository(db: Db) {
  // Prepared once: the MCP proxy looks a connector up on every request.
  const byId = db.select().from(connectors).where(eq(connectors.id, sql.placeholder("id"))).prepare();
  return {
    insert: (row: ConnectorRow) => db.insert(connectors).values(row).run(),
    findById: (id: string): ConnectorRow | undefined => byId.get({ id }),
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
      return db.update(connectors).set(patch).where(eq(connectors.id, id)).returning().get();
    },
    countByState: () =>
      db.select({ state: connectors.state, count: sql<number>`count(*)` }).from(connectors).groupBy(connectors.state).all(),
    delete: (id: string) => db.delete(connectors).where(eq(connectors.id, id)).returning({ id: connectors.id }).all().length === 1,
  };
}
export type ConnectorRepository = ReturnType<typeof createConnectorRepository>;
