import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { embeddedMigrations } from "./migrations.macro" with { type: "macro" };

/** The SQLite store; repositories (each feature's repository.ts) are its only users. Tables: each feature's table.ts. */
export type Db = BunSQLiteDatabase & { $client: Database };

export type OpenedDatabase = { db: Db; sqlite: Database; applied: number; close(): void };

const MIGRATIONS: MigrationMeta[] = embeddedMigrations();

/** Opens (creating if needed) and migrates the database. `migrations` is replaceable for upgrade tests. */
export function openDatabase(path: string, migrations: MigrationMeta[] = MIGRATIONS): OpenedDatabase {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA busy_timeout = 5000");
  if (path !== ":memory:") sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  const db = drizzle({ client: sqlite });
  const applied = migrate(db, sqlite, migrations);
  return {
    db,
    sqlite,
    applied,
    close: () => {
      sqlite.exec("PRAGMA optimize");
      sqlite.close();
    },
  };
}

/** Applies the embedded migrations newer than the last one recorded; returns how many ran. */
function migrate(db: Db, sqlite: Database, migrations: MigrationMeta[]): number {
  const table = sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  const last = table
    ? (sqlite.query("SELECT max(created_at) AS at FROM __drizzle_migrations").get() as { at: number | null }).at
    : null;
  const pending = migrations.filter((m) => last === null || m.folderMillis > Number(last)).length;
  // drizzle's own bookkeeping (table __drizzle_migrations), so drizzle-kit and the binary agree.
  (db as unknown as { dialect: { migrate(m: MigrationMeta[], s: unknown, c: object): void }; session: unknown }).dialect.migrate(
    migrations,
    (db as unknown as { session: unknown }).session,
    {},
  );
  return pending;
}
