import { beforeAll, describe, expect, test } from "bun:test";
import { getTableColumns, getTableName } from "drizzle-orm";
import { TABLES } from "../../src/cli/tables";
import { openPostgresStore, type PostgresStore } from "../../src/db/postgres";
import { openSqliteStore, type SqliteStore } from "../../src/db/sqlite";
import { sharedPostgres } from "../support/store";

// The list that `copy` and `rotate-key` read (src/cli/tables.ts) held to the truth: the catalogues of freshly
// migrated databases, SQLite and PostgreSQL. A table added by a migration and not listed fails here, whether it is to
// be copied or not (the list says which, and why).
type Catalogue = {
  tables: string[];
  columns: Map<string, string[]>;
  primaryKeys: Map<string, string[]>;
  parents: Map<string, string[]>;
};

async function sqliteCatalogue(store: SqliteStore): Promise<Catalogue> {
  const db = store.sqlite;
  // The migrator's bookkeeping and SQLite's own (AUTOINCREMENT's counters) are not the service's data.
  const tables = (
    db
      .query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '__drizzle_migrations'",
      )
      .all() as { name: string }[]
  ).map((r) => r.name);
  const columns = new Map<string, string[]>();
  const primaryKeys = new Map<string, string[]>();
  const parents = new Map<string, string[]>();
  for (const table of tables) {
    columns.set(
      table,
      (db.query(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[]).map((c) => c.name),
    );
    const key = db.query(`SELECT name, pk FROM pragma_table_info('${table}') WHERE pk > 0 ORDER BY pk`).all() as {
      name: string;
    }[];
    primaryKeys.set(
      table,
      key.map((c) => c.name),
    );
    parents.set(
      table,
      (db.query(`SELECT "table" AS parent FROM pragma_foreign_key_list('${table}')`).all() as { parent: string }[]).map(
        (r) => r.parent,
      ),
    );
  }
  return { tables, columns, primaryKeys, parents };
}

async function postgresCatalogue(store: PostgresStore): Promise<Catalogue> {
  const { client } = store;
  // drizzle's bookkeeping lives in its own schema ("drizzle"); the service's tables are in public.
  const tables = (await client`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`).map(
    (r: { table_name: string }) => r.table_name,
  );
  const columns = new Map<string, string[]>();
  for (const r of await client`SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'`) {
    columns.set(r.table_name, [...(columns.get(r.table_name) ?? []), r.column_name]);
  }
  const primaryKeys = new Map<string, string[]>();
  for (const r of await client`
    SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc
    JOIN information_schema.key_column_usage kcu ON kcu.constraint_schema = tc.constraint_schema AND kcu.constraint_name = tc.constraint_name
    WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = 'public' ORDER BY kcu.ordinal_position`) {
    primaryKeys.set(r.table_name, [...(primaryKeys.get(r.table_name) ?? []), r.column_name]);
  }
  const parents = new Map<string, string[]>();
  for (const r of await client`SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f'`) {
    parents.set(r.child, [...(parents.get(r.child) ?? []), r.parent]);
  }
  return { tables, columns, primaryKeys, parents };
}

const catalogues: Record<"sqlite" | "postgres", Catalogue> = {} as never;
beforeAll(async () => {
  const sqlite = openSqliteStore(":memory:");
  catalogues.sqlite = await sqliteCatalogue(sqlite);
  await sqlite.close();
  const postgres = await openPostgresStore(await (await sharedPostgres()).createDatabase(), { maxConnections: 2 });
  catalogues.postgres = await postgresCatalogue(postgres);
  await postgres.close();
});
const names = TABLES.map((entry) => entry.name);

describe.each(["sqlite", "postgres"] as const)("the list of tables against the %s catalogue", (dialect) => {
  test("names every table of the migrated schema, once, and nothing else", () => {
    const catalogue = catalogues[dialect];
    expect(catalogue.tables.length).toBeGreaterThanOrEqual(17);
    expect([...names].sort()).toEqual([...catalogue.tables].sort());
    expect(new Set(names).size).toBe(names.length);
  });

  test("defines each table with every column of the migrated one: a copy reads and writes through the definitions", () => {
    for (const entry of TABLES) {
      const defined = Object.values(getTableColumns(dialect === "sqlite" ? entry.sqlite : entry.postgres)).map(
        (column) => column.name,
      );
      expect({ table: entry.name, columns: defined.sort() }).toEqual({
        table: entry.name,
        columns: [...catalogues[dialect].columns.get(entry.name)!].sort(),
      });
    }
  });

  test("gives each table its primary key: what makes a second copy an update", () => {
    for (const entry of TABLES)
      expect({ table: entry.name, key: [...entry.key].sort() }).toEqual({
        table: entry.name,
        key: [...catalogues[dialect].primaryKeys.get(entry.name)!].sort(),
      });
  });

  test("puts every parent before its children (a copy inserts in this order)", () => {
    const misplaced: string[] = [];
    for (const [child, parents] of catalogues[dialect].parents) {
      for (const parent of parents)
        if (names.indexOf(parent) >= names.indexOf(child)) misplaced.push(`${child} before its parent ${parent}`);
    }
    expect(misplaced).toEqual([]);
    expect([...catalogues[dialect].parents.values()].flat().length).toBeGreaterThan(5);
  });
});

test("each table's two definitions are the same table, and every table says why it is copied or not", () => {
  for (const entry of TABLES) {
    expect(entry.why.length).toBeGreaterThan(20);
    expect(getTableName(entry.postgres)).toBe(entry.name);
  }
  expect(TABLES.filter((entry) => !entry.copied).map((entry) => entry.name)).toEqual([
    "job_leases",
    "rate_buckets",
    "parked_handoffs",
  ]);
});
