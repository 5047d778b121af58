import { and, desc, eq, lt, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";

/** Where a newest-first page ended: the last item's creation time and id (ids break ties). */
export type PageCursor = { created_at: number; id: string };

/** The columns a newest-first listing orders by. */
export type PageColumns = { created_at: SQLiteColumn; id: SQLiteColumn };

/** Rows after `after` in newest-first order (keyset pagination: no offset, stable while rows are added). */
export const olderThan = (columns: PageColumns, after: PageCursor): SQL =>
  or(lt(columns.created_at, after.created_at), and(eq(columns.created_at, after.created_at), lt(columns.id, after.id)))!;

/** Newest first, ids breaking ties: the order `olderThan` continues. */
export const newestFirst = (columns: PageColumns) => [desc(columns.created_at), desc(columns.id)] as const;
