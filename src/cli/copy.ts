import { existsSync } from "node:fs";
import { sql, type SQL } from "drizzle-orm";
import { openStore } from "../db/open";
import type { Store } from "../db/store";
import { afterKey, tableOn, TABLES, type Row } from "./tables";

/** Rows per page (one statement, one transaction): far below SQLite's 32,766 and PostgreSQL's 65,535 parameters for the widest table. */
const BATCH = 500;

const USAGE = "usage: connector-service copy --from <SQLite file | postgres://…> --to <SQLite file | postgres://…>";

/**
 * `connector-service copy --from A --to B`: every row of one store into another (SQLite ↔ PostgreSQL, or the same
 * kind), table by table in the order of tables.ts (parents first), a page of rows per transaction on the target —
 * so a table of any size (the audit trail) never has to fit in memory. Sealed values are copied as they are: they
 * stay sealed under the same key, so the target's service needs that key (SECRETS__KEY; a SQLite key file holds it in
 * base64). Idempotent: rows already there are updated to the source's, nothing is duplicated; rows only in the target
 * are left alone; interrupted, run it again. The target should be new (or an earlier copy of the same source): event
 * ids are numbered per database, so a target's own events would be replaced by the source's of the same id. Prints
 * the rows copied per table, and the tables it leaves out and why. Stop the services using the source first.
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
      const not_copied = Object.fromEntries(TABLES.filter((entry) => !entry.copied).map((entry) => [entry.name, entry.why]));
      process.stdout.write(`${JSON.stringify({ level: "info", msg: "copied", from: source.dialect, to: target.dialect, rows, not_copied })}\n`);
      return 0;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** Copies every table of tables.ts that is copied from `source` into `target`, `batch` rows at a time; the rows per table. */
export async function copyRows(source: Store, target: Store, batch = BATCH): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const entry of TABLES) {
    if (!entry.copied) continue;
    const from = tableOn(source, entry);
    const to = tableOn(target, entry);
    // Every column but the key takes the source's value: `excluded` is the row that was to be inserted.
    const set: Record<string, SQL> = {};
    for (const [field, column] of Object.entries(to.columns)) if (!entry.key.includes(field)) set[field] = sql.raw(`excluded."${column.name}"`);
    let count = 0;
    for (let last: Row | undefined; ; ) {
      const rows: Row[] = await source.db
        .select()
        .from(from.table as never)
        .where(afterKey(entry, from.key, last))
        .orderBy(...(from.key as never[]))
        .limit(batch);
      if (rows.length === 0) break;
      await target.transaction(function* (tx) {
        yield tx
          .insert(to.table as never)
          .values(rows as never)
          .onConflictDoUpdate({ target: to.key as never, set });
      });
      count += rows.length;
      if (rows.length < batch) break;
      last = rows.at(-1);
    }
    counts[entry.name] = count;
    if (entry.serial) for (const field of entry.key) await target.continueSerial(entry.name, to.columns[field]!.name);
  }
  return counts;
}

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

const location = (value: string) => (/^postgres(ql)?:\/\//.test(value) ? { path: "", url: value } : { path: value });
