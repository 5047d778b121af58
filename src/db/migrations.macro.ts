import { readMigrationFiles } from "drizzle-orm/migrator";
import { join } from "node:path";

// Run at bundle time (imported `with { type: "macro" }`): each dialect's SQL of `drizzle/` is inlined into the
// program, so the compiled binary migrates from any directory with no folder beside it.
const folder = (dialect: string) => join(import.meta.dir, "../../drizzle", dialect);

export const sqliteMigrations = () => readMigrationFiles({ migrationsFolder: folder("sqlite") });
export const postgresMigrations = () => readMigrationFiles({ migrationsFolder: folder("postgres") });
