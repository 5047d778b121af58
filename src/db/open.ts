import { openPostgresStore } from "./postgres";
import { openSqliteStore, SQLITE_MIGRATIONS } from "./sqlite";
import type { Store } from "./store";

/**
 * Opens and migrates the configured store: PostgreSQL when a URL is given, else SQLite at `path` (the default), whose
 * checkpoint thread (unless `checkpointThread` is false) tells `checkpointsStopped` if it stops.
 */
export async function openStore(
  database: { path: string; url?: string; maxConnections?: number; checkpointThread?: boolean },
  checkpointsStopped?: (error: string) => void,
): Promise<Store> {
  if (database.url) return openPostgresStore(database.url, { maxConnections: database.maxConnections });
  return openSqliteStore(
    database.path,
    SQLITE_MIGRATIONS,
    database.checkpointThread !== false && { stopped: checkpointsStopped },
  );
}
