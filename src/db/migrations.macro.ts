import { readMigrationFiles } from "drizzle-orm/migrator";
import { join } from "node:path";

/**
 * Runs at bundle time (imported `with { type: "macro" }`): the SQL of `drizzle/` is inlined into the
 * program, so the compiled binary migrates from any directory with no folder beside it.
 */
export function embeddedMigrations() {
  return readMigrationFiles({ migrationsFolder: join(import.meta.dir, "../../drizzle") });
}
