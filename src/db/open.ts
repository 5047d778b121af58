import { openSqliteStore } from "./sqlite";
import type { Store } from "./store";

/** Opens and migrates the configured store: SQLite at `path` (the default). */
export async function openStore(database: { path: string }): Promise<Store> {
  return openSqliteStore(database.path);
}
