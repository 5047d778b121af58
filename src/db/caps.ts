import { eq, getTableName, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./store";

/**
 * Inside a transaction: whether `owner` has fewer than `max` rows of `table` (owned through `column`). It first takes
 * the lock on that owner's rows of the table, so two inserts at once cannot both see room for one (CONNECTOR__MAX_PER_USER,
 * AUTH__MAX_TOKENS_PER_USER, VIRTUAL__MAX_PER_USER).
 */
export function* hasRoom(
  tx: Db,
  lock: (key: string) => unknown,
  table: SQLiteTable,
  column: SQLiteColumn,
  owner: string,
  max: number,
): Generator<unknown, boolean, any> {
  yield lock(`${getTableName(table)}:${owner}`);
  const [owned] = yield tx
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(table)
    .where(eq(column, owner));
  return (owned?.n ?? 0) < max;
}
