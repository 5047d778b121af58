import { and, desc, eq, lt, or, sql, type SQL } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Db } from "../db/open";
import type { Reseal } from "../secrets/sealer";
import { SEALED_COLUMNS, sealContext } from "./sealing";
import type { ConnectorState } from "./model";
import { connectors } from "./table";

export type ConnectorRow = typeof connectors.$inferSelect;
/** The columns a connection owns; only transitions.ts writes them. */
export type ConnectionColumns = Pick<
  ConnectorRow,
  "state" | "auth_method" | "disconnect_reason" | "headers" | "header_names" | "access_token" | "authorization_url" | "redirect_url"
>;
export type PageCursor = { created_at: number; id: string };

/** Connectors. Asynchronous, so that another store can implement it without touching callers. */
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
  /** Key rotation: every sealed value of this table, re-sealed by `reseal`; answers how many. */
  resealAll(reseal: Reseal): Promise<number>;
};

/** How long a connector row read for the proxy may be reused (see cache/ttl-cache.ts). */
export const CONNECTOR_CACHE_MS = 1000;

export function createConnectorRepository(db: Db, clock: () => number = Date.now): ConnectorRepository {
  // Prepared once, and cached briefly: the MCP proxy looks a connector up on every request.
  const byId = db.select().from(connectors).where(eq(connectors.id, sql.placeholder("id"))).prepare();
  const cache = createTtlCache<ConnectorRow>(CONNECTOR_CACHE_MS, 10_000, clock);
  return {
    async insert(row, maxPerOwner) {
      return db.transaction((tx) => {
        const [owned] = tx.select({ n: sql<number>`count(*)` }).from(connectors).where(eq(connectors.owner_id, row.owner_id)).all();
        if ((owned?.n ?? 0) >= maxPerOwner) return false;
        tx.insert(connectors).values(row).run();
        return true;
      });
    },
    findById: async (id) => byId.get({ id }),
    findByIdCached: async (id) => cache.readThrough(id, () => byId.get({ id })),
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
        .limit(limit)
        .all();
    },
    async writeConnection(id, columns, at, whenState) {
      const where = whenState === undefined ? eq(connectors.id, id) : and(eq(connectors.id, id), eq(connectors.state, whenState));
      const row = db.update(connectors).set({ ...columns, updated_at: at }).where(where).returning().get();
      if (row) cache.set(id, row);
      else cache.delete(id);
      return row;
    },
    connectedManaged: async () =>
      db.select().from(connectors).where(and(eq(connectors.state, "connected"), sql`${connectors.url} LIKE 'mcp+stdio:%'`)).all(),
    countByState: async () =>
      db.select({ state: connectors.state, count: sql<number>`count(*)` }).from(connectors).groupBy(connectors.state).all(),
    async delete(id) {
      cache.delete(id);
      return db.delete(connectors).where(eq(connectors.id, id)).returning({ id: connectors.id }).all().length === 1;
    },
    async resealAll(reseal) {
      let count = 0;
      for (const row of db.select().from(connectors).all()) {
        const patch: Partial<Record<(typeof SEALED_COLUMNS)[number], string>> = {};
        for (const column of SEALED_COLUMNS) {
          const sealed = row[column];
          if (sealed === null) continue;
          patch[column] = reseal(sealed, sealContext(row.id, column));
          count++;
        }
        if (Object.keys(patch).length) db.update(connectors).set(patch).where(eq(connectors.id, row.id)).run();
      }
      cache.clear();
      return count;
    },
  };
}
