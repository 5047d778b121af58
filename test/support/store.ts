import type { SQL } from "drizzle-orm";
import { openPostgresStore } from "../../src/db/postgres";
import { openSqliteStore, type SqliteStore } from "../../src/db/sqlite";
import type { Store } from "../../src/db/store";
import { startPostgres, type Postgres } from "../peers/postgres";

/**
 * Which store the behaviour tests run on: SQLite (in memory) unless TEST_STORE=postgres, when each service gets a
 * fresh database on one throwaway PostgreSQL server per test process (npm test runs the suites both ways).
 */
export const TEST_STORE: "sqlite" | "postgres" = process.env.TEST_STORE === "postgres" ? "postgres" : "sqlite";

let server: Promise<Postgres> | undefined;

/**
 * The test process's PostgreSQL server, started on first use and stopped after the last test file (preload.ts:
 * `bun test` runs no "exit" listener, so that alone would leave the server and its files behind).
 */
export function sharedPostgres(): Promise<Postgres> {
  server ??= startPostgres().then((pg) => {
    process.once("exit", () => pg.kill());
    return pg;
  });
  return server;
}

/** Stops the shared server, if one was started, and deletes its files. */
export async function stopSharedPostgres(): Promise<void> {
  const started = server;
  server = undefined;
  if (started) await (await started).stop();
}

/** The database settings of a service under test: a fresh PostgreSQL database, or SQLite in memory. */
export async function testDatabaseEnv(): Promise<Record<string, string>> {
  if (TEST_STORE === "sqlite") return { DATABASE__PATH: ":memory:" };
  return { DATABASE__URL: await (await sharedPostgres()).createDatabase() };
}

/** A fresh, migrated store for a test: SQLite in memory, or a new PostgreSQL database. */
export async function openTestStore(): Promise<Store> {
  if (TEST_STORE === "sqlite") return openSqliteStore(":memory:");
  return openPostgresStore(await (await sharedPostgres()).createDatabase(), { maxConnections: 4 });
}

/** Rows of a raw query on either store (JSON columns come back as text on SQLite, as values on PostgreSQL). */
export async function queryRows<T>(deps: { store: Store }, query: SQL): Promise<T[]> {
  const db = deps.store.db as unknown as { all(q: SQL): T[]; execute(q: SQL): Promise<T[]> };
  return deps.store.dialect === "sqlite" ? db.all(query) : [...(await db.execute(query))];
}

/** The raw SQLite handle under a service's store, for tests of what only SQLite has (PRAGMAs, its files). */
export function sqliteOf(deps: { store: Store }) {
  if (deps.store.dialect !== "sqlite") throw new Error("this test needs the SQLite store");
  return (deps.store as SqliteStore).sqlite;
}
