import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { RowsQuery } from "./rows";

/**
 * Drizzle over the store: the query builders both dialects have, and nothing else. They are typed as SQLite's; on
 * PostgreSQL they are Drizzle's PostgreSQL ones, given that dialect's tables (`Store.table`; postgres.ts says why that
 * is sound). Repositories build a query and await it; never `.get()`, `.all()` or `.run()` (SQLite's alone;
 * test/architecture checks it), and use `Store.transaction`, `Store.prepareFirst` where the two differ.
 */
export type Db = Pick<BunSQLiteDatabase, "select" | "insert" | "update" | "delete">;

/**
 * The body of a transaction, written once for both stores: it yields each query and gets its rows back. SQLite runs
 * it synchronously inside one `BEGIN IMMEDIATE` (nothing else of this process can interleave); PostgreSQL awaits
 * each query inside one transaction. `lock(key)` serialises transactions that name the same key (PostgreSQL: a
 * transaction-scoped advisory lock; SQLite: writers are serialised already), for check-then-insert rules.
 */
export type TransactionBody<T> = (tx: Db, lock: (key: string) => unknown) => Generator<unknown, T, any>;

/** A query prepared once and run with named placeholders (`sql.placeholder`), answering its first row. */
export type PreparedFirst<Row> = (params: Record<string, unknown>) => Promise<Row | undefined>;

export type Store = {
  readonly dialect: "sqlite" | "postgres";
  readonly db: Db;
  /** A feature's table for this store's dialect: its SQLite definition (for the types) or its PostgreSQL one. */
  table<T>(sqlite: T, postgres: unknown): T;
  transaction<T>(body: TransactionBody<T>): Promise<T>;
  /** `name` must be unique per statement (PostgreSQL names its prepared statements). */
  prepareFirst<Row>(name: string, query: { prepare(name?: string): unknown }): PreparedFirst<Row>;
  /**
   * A bulk insert prepared once (rows.ts): `build(count)` is the insert of `count` rows of `rowPlaceholders`; a list of
   * rows is written in one transaction, a hundred rows per statement. For the audit trail, whose batches would cost more
   * to build than to write; the insert should be idempotent (ON CONFLICT DO NOTHING), so a retried batch is harmless.
   */
  prepareRows(name: string, build: RowsQuery): (rows: Record<string, unknown>[]) => Promise<void>;
  /**
   * After rows were written with their generated key given (a copy): the key's generator continues past them. SQLite's
   * AUTOINCREMENT does by itself; a PostgreSQL sequence does not, and would hand out a copied key again.
   */
  continueSerial(table: string, column: string): Promise<void>;
  /** Migrations applied when the store was opened. */
  readonly applied: number;
  /** Answers when the store can be queried now (`/readyz`). */
  ping(): Promise<void>;
  close(): Promise<void>;
};
