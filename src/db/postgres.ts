import { SQL } from "bun";
import { sql } from "drizzle-orm";
import { BunSQLSession, drizzle, type BunSQLDatabase, type BunSQLQueryResultHKT } from "drizzle-orm/bun-sql";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { PgDialect, type PgDatabase, type PgSession } from "drizzle-orm/pg-core";
import { postgresMigrations } from "./migrations.macro" with { type: "macro" };
import { namedParams, ROWS_PER_STATEMENT } from "./rows";
import type { Db, Store } from "./store";

export type PostgresStore = Store & { readonly dialect: "postgres"; readonly client: SQL };

export const POSTGRES_MIGRATIONS: MigrationMeta[] = postgresMigrations();

/** The advisory lock every replica takes to migrate: replicas starting together migrate once, one after another. */
const MIGRATION_LOCK = 0x63_73_6d_67; // "csmg"

export type PostgresOptions = {
  /** Connections in this process's pool. */
  maxConnections?: number;
  migrations?: MigrationMeta[];
};

/**
 * Opens the PostgreSQL store at `url` (Bun's built-in client) and applies the embedded migrations under an advisory
 * lock. Drizzle keeps its own bookkeeping (`drizzle.__drizzle_migrations`), so drizzle-kit and the binary agree.
 */
export async function openPostgresStore(url: string, options: PostgresOptions = {}): Promise<PostgresStore> {
  const client = new SQL(url, { max: options.maxConnections ?? 10, idleTimeout: 60, connectionTimeout: 10 });
  try {
    const applied = await migrate(client, options.migrations ?? POSTGRES_MIGRATIONS);
    return postgresStore(client, drizzle({ client }), applied);
  } catch (e) {
    await client.close();
    throw e;
  }
}

/**
 * Drizzle's PostgreSQL database (or a transaction of it) as the store's `Db`: the one place where the types bend, and
 * why it is sound. `Db` offers only the builders both dialects have (select, insert, update, delete), typed for the
 * SQLite tables; here they get the PostgreSQL definitions of the same tables (`Store.table`). Every table is defined
 * for both dialects with rows of one type (`SameRow` in columns.ts fails to compile otherwise); the builder methods the
 * repositories chain (where, orderBy, limit, offset, values, set, returning, onConflictDo*) exist with the same
 * meaning on both; a query runs by being awaited on both, while SQLite's synchronous `.get()`, `.all()`, `.run()` are
 * refused in repositories by test/architecture. Every repository test runs on both stores (`TEST_STORE=postgres`).
 */
const asDb = (pg: PgDatabase<BunSQLQueryResultHKT>): Db => pg as unknown as Db;

function postgresStore(client: SQL, pg: BunSQLDatabase, applied: number): PostgresStore {
  return {
    dialect: "postgres",
    db: asDb(pg),
    client,
    applied,
    table: (_sqlite, postgres) => postgres as never,
    transaction: (body) =>
      pg.transaction(async (tx) => {
        // A transaction-scoped advisory lock per key: check-then-insert rules hold between replicas too.
        const lock = (key: string) => tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${key}))`);
        const steps = body(asDb(tx), lock);
        let step = steps.next();
        while (!step.done) step = steps.next(step.value === undefined ? undefined : await step.value);
        return step.value;
      }),
    prepareFirst(name, query) {
      const prepared = query.prepare(name) as { execute(params: Record<string, unknown>): Promise<never[]> };
      return async (params) => (await prepared.execute(params))[0];
    },
    prepareRows(name, build) {
      type Prepared = { execute(params: Record<string, unknown>): Promise<unknown> };
      const many = build(ROWS_PER_STATEMENT).prepare(`${name}_${ROWS_PER_STATEMENT}`) as Prepared;
      const one = build(1).prepare(`${name}_1`) as Prepared;
      // Statement after statement, outside a transaction (a prepared statement runs on the pool): the insert is idempotent.
      return async (rows) => {
        let offset = 0;
        for (; offset + ROWS_PER_STATEMENT <= rows.length; offset += ROWS_PER_STATEMENT)
          await many.execute(namedParams(rows, offset, ROWS_PER_STATEMENT));
        for (; offset < rows.length; offset++) await one.execute(namedParams(rows, offset, 1));
      };
    },
    async continueSerial(table, column) {
      // nextval too: a sequence already past the largest key (rows deleted since) must not go back.
      await client`SELECT setval(s::regclass, GREATEST((SELECT coalesce(max(${client(column)}), 0) FROM ${client(table)}), nextval(s::regclass))) FROM pg_get_serial_sequence(${table}, ${column}) AS s`;
    },
    async ping() {
      await client`SELECT 1`;
    },
    close: () => client.close(),
  };
}

async function migrate(client: SQL, migrations: MigrationMeta[]): Promise<number> {
  const session = await client.reserve();
  try {
    await session`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
    try {
      const [table] = await session`SELECT to_regclass('drizzle.__drizzle_migrations') AS name`;
      const last = table?.name
        ? Number((await session`SELECT max(created_at) AS at FROM drizzle.__drizzle_migrations`)[0]?.at ?? 0)
        : null;
      const pending = migrations.filter((m) => last === null || m.folderMillis > last).length;
      if (pending) {
        // Drizzle's migrator without its reading of a folder at run time (the SQL was read from drizzle/postgres at build
        // time): the public dialect and session classes `drizzle()` builds, and the bookkeeping table read above.
        const dialect = new PgDialect();
        const pool: PgSession = new BunSQLSession(client, dialect, undefined);
        await dialect.migrate(migrations, pool, {
          migrationsFolder: "drizzle/postgres",
          migrationsSchema: "drizzle",
          migrationsTable: "__drizzle_migrations",
        });
      }
      return pending;
    } finally {
      await session`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
    }
  } finally {
    session.release();
  }
}
