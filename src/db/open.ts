import { openPostgresStore } from "./postgres";
import { openSqliteStore } from "./sqlite";
import type { Store } from "./store";

/** Opens and migrates the configured store: PostgreSQL when a URL is given, else SQLite at `path` (the default). */
export async function openStore(database: { path: string; url?: string; maxConnections?: number }): Promise<Store> {
  if (database.url) return openPostgresStore(database.url, { maxConnections: database.maxConnections });
  return openSqliteStore(database.path);
}
