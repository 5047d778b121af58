import { Database } from "bun:sqlite";
import { drizzle, SQLiteBunSession } from "drizzle-orm/bun-sqlite";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { sqliteMigrations } from "./migrations.macro" with { type: "macro" };
import { startCheckpointThread } from "./checkpoint-thread";
import { positionalParams, ROWS_PER_STATEMENT } from "./rows";
import type { Store } from "./store";

/** The SQLite store (the default); `sqlite` is the raw handle for what only SQLite has (tests, PRAGMAs). */
export type SqliteStore = Store & { readonly dialect: "sqlite"; readonly sqlite: Database };

export const SQLITE_MIGRATIONS: MigrationMeta[] = sqliteMigrations();

/** How long a statement waits for another connection's write (the checkpoint thread's, another process's). */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed) and migrates the database at `path`; on a file, checkpoints run on a thread of their own
 * (checkpoint-thread.ts; `stopped` hears why, if they stop) unless `checkpoints` is false (then SQLite's own, in
 * the commits). `migrations` is replaceable for upgrade tests.
 */
export function openSqliteStore(
  path: string,
  migrations: MigrationMeta[] = SQLITE_MIGRATIONS,
  checkpoints: { stopped?: (error: string) => void } | false = {},
): SqliteStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  if (path !== ":memory:") sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  const db = drizzle({ client: sqlite });
  const applied = migrate(sqlite, migrations);
  const checkpointer =
    path === ":memory:" || !checkpoints ? undefined : startCheckpointThread(sqlite, path, BUSY_TIMEOUT_MS, checkpoints.stopped);
  return {
    dialect: "sqlite",
    db,
    sqlite,
    applied,
    table: (table) => table,
    // Synchronous from BEGIN to COMMIT: every yielded query runs at once, so nothing else can slip in between.
    async transaction(body) {
      return db.transaction(
        (tx) => {
          const steps = body(tx, () => undefined);
          let step = steps.next();
          while (!step.done) step = steps.next(step.value === undefined ? undefined : (step.value as { all(): unknown }).all());
          return step.value;
        },
        { behavior: "immediate" },
      );
    },
    prepareFirst(_name, query) {
      const prepared = query.prepare() as { get(params: Record<string, unknown>): never };
      return async (params) => prepared.get(params);
    },
    prepareRows(_name, build) {
      // Run on the raw handle with positional values: Drizzle's prepared run would fill its placeholders by name each time.
      const statement = (count: number) => {
        const { sql, params } = build(count).toSQL();
        return { run: sqlite.prepare(sql), values: positionalParams(params) };
      };
      const [many, one] = [statement(ROWS_PER_STATEMENT), statement(1)];
      const runAll = sqlite.transaction((rows: Record<string, unknown>[]) => {
        let offset = 0;
        for (; offset + ROWS_PER_STATEMENT <= rows.length; offset += ROWS_PER_STATEMENT)
          many.run.run(...(many.values(rows, offset) as never[]));
        for (; offset < rows.length; offset++) one.run.run(...(one.values(rows, offset) as never[]));
      });
      return async (rows) => void runAll.immediate(rows);
    },
    // sqlite_sequence follows the largest key inserted (https://sqlite.org/autoinc.html).
    continueSerial: async () => undefined,
    async ping() {
      sqlite.query("SELECT 1").get();
    },
    async close() {
      await checkpointer?.close();
      sqlite.exec("PRAGMA optimize");
      sqlite.close();
    },
  };
}

/** Applies the embedded migrations newer than the last one recorded; returns how many ran. */
function migrate(sqlite: Database, migrations: MigrationMeta[]): number {
  const table = sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  const last = table
    ? (sqlite.query("SELECT max(created_at) AS at FROM __drizzle_migrations").get() as { at: number | null }).at
    : null;
  const pending = migrations.filter((m) => last === null || m.folderMillis > Number(last)).length;
  // Drizzle's migrator without its reading of a folder at run time (the SQL was read from drizzle/sqlite at build
  // time): the public dialect and session classes `drizzle()` builds, and the bookkeeping table read above.
  const dialect = new SQLiteSyncDialect();
  dialect.migrate(migrations, new SQLiteBunSession(sqlite, dialect, undefined), {
    migrationsFolder: "drizzle/sqlite",
    migrationsTable: "__drizzle_migrations",
  });
  return pending;
}
