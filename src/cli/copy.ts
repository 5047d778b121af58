import { existsSync } from "node:fs";
import { getTableColumns, getTableName, sql, type Column, type SQL, type Table } from "drizzle-orm";
import { providers, providersPg } from "../a2a/table";
import { connectors, connectorsPg } from "../connectors/table";
import { openStore } from "../db/open";
import type { Store } from "../db/store";
import { oauth_clients, oauth_clientsPg, oauth_grants, oauth_grantsPg, oauth_states, oauth_statesPg } from "../oauth/table";
import { api_tokens, api_tokensPg, users, usersPg } from "../users/table";

/**
 * What a copy moves, parents before children (foreign keys), each with its primary key (what makes a second run an
 * update, not a duplicate). Job leases are not copied: they belong to the running processes of one deployment.
 */
const TABLES: { sqlite: Table; postgres: unknown; key: string[] }[] = [
  { sqlite: users, postgres: usersPg, key: ["id"] },
  { sqlite: api_tokens, postgres: api_tokensPg, key: ["id"] },
  { sqlite: connectors, postgres: connectorsPg, key: ["id"] },
  { sqlite: oauth_clients, postgres: oauth_clientsPg, key: ["issuer", "redirect_uri"] },
  { sqlite: oauth_states, postgres: oauth_statesPg, key: ["state_digest"] },
  { sqlite: oauth_grants, postgres: oauth_grantsPg, key: ["connector_id"] },
  { sqlite: providers, postgres: providersPg, key: ["id"] },
];

/** Rows per statement: far below SQLite's 32,766 and PostgreSQL's 65,535 parameters for the widest table. */
const BATCH = 500;

const USAGE = "usage: connector-service copy --from <SQLite file | postgres://…> --to <SQLite file | postgres://…>";

/**
 * `connector-service copy --from A --to B`: every row of one store into another (SQLite ↔ PostgreSQL, or the same
 * kind), in one transaction on the target. Sealed values are copied as they are — they stay sealed under the same
 * key, so the target's service needs that key (SECRETS__KEY; a SQLite key file holds it in base64). Idempotent: rows
 * already there are updated to the source's, nothing is duplicated; rows only in the target are left alone. Prints
 * the rows copied per table. Stop the services using the source first, or copy again after they stopped.
 */
export async function copy(args: string[]): Promise<number> {
  const from = option(args, "--from");
  const to = option(args, "--to");
  if (!from || !to || args.length !== 4) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (from === to) {
    process.stderr.write("connector-service copy: --from and --to are the same store\n");
    return 2;
  }
  if (!location(from).url && !existsSync(from)) {
    process.stderr.write(`connector-service copy: there is no database at ${from}\n`);
    return 2;
  }
  const source = await openStore(location(from));
  try {
    const target = await openStore(location(to));
    try {
      const rows = await copyRows(source, target);
      process.stdout.write(`${JSON.stringify({ level: "info", msg: "copied", from: source.dialect, to: target.dialect, rows })}\n`);
      return 0;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** Copies every table of `source` into `target` in one transaction; the rows per table. */
export async function copyRows(source: Store, target: Store): Promise<Record<string, number>> {
  const read: { table: Table; key: string[]; rows: Record<string, unknown>[] }[] = [];
  for (const { sqlite, postgres, key } of TABLES) {
    read.push({ table: target.table(sqlite, postgres), key, rows: await source.db.select().from(source.table(sqlite, postgres) as never) });
  }
  return target.transaction(function* (tx) {
    const counts: Record<string, number> = {};
    for (const { table, key, rows } of read) {
      const columns: Record<string, Column> = getTableColumns(table);
      // Every column but the key takes the source's value: `excluded` is the row that was to be inserted.
      const set: Record<string, SQL> = {};
      for (const [field, column] of Object.entries(columns)) if (!key.includes(field)) set[field] = sql.raw(`excluded."${column.name}"`);
      const target = key.map((field) => columns[field]!);
      for (let i = 0; i < rows.length; i += BATCH) {
        yield tx
          .insert(table as never)
          .values(rows.slice(i, i + BATCH) as never)
          .onConflictDoUpdate({ target: target as never, set });
      }
      counts[getTableName(table)] = rows.length;
    }
    return counts;
  });
}

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

const location = (value: string) => (/^postgres(ql)?:\/\//.test(value) ? { path: "", url: value } : { path: value });
