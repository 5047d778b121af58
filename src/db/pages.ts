import { and, desc, eq, lt, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./store";

/** Where a newest-first page ended: the last item's creation time and id (ids break ties). */
export type PageCursor = { created_at: number; id: string };

/** A table listed newest first, per owner (connectors, virtual servers). */
export type OwnedTable = SQLiteTable & { created_at: SQLiteColumn; id: SQLiteColumn; owner_id: SQLiteColumn };

/** Rows after `after` in newest-first order (keyset pagination: no offset, stable while rows are added). */
const olderThan = (table: OwnedTable, after: PageCursor): SQL =>
  or(lt(table.created_at, after.created_at), and(eq(table.created_at, after.created_at), lt(table.id, after.id)))!;

/**
 * One page of `table`, newest first (ids breaking ties), after `after`: `ownerId`'s rows, or everyone's when undefined
 * (administrators).
 */
export function newestFirstPage<T extends OwnedTable>(
  db: Db,
  table: T,
  ownerId: string | undefined,
  limit: number,
  after: PageCursor | undefined,
): Promise<T["$inferSelect"][]> {
  const conditions: SQL[] = [];
  if (ownerId !== undefined) conditions.push(eq(table.owner_id, ownerId));
  if (after) conditions.push(olderThan(table, after));
  return db
    .select()
    .from(table as SQLiteTable)
    .where(and(...conditions))
    .orderBy(desc(table.created_at), desc(table.id))
    .limit(limit) as Promise<T["$inferSelect"][]>;
}
