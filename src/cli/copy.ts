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
      let rows: Record<string, number>;
      try {
        rows = await copyRows(source, target);
      } catch (e) {
        if (!(e instanceof CopyStopped)) throw e;
        process.stderr.write(`connector-service copy: ${e.message}\n`);
        return 1;
      }
      const not_copied = Object.fromEntries(TABLES.filter((entry) => !entry.copied).map((entry) => [entry.name, entry.why]));
      process.stdout.write(
        `${JSON.stringify({ level: "info", msg: "copied", from: source.dialect, to: target.dialect, rows, not_copied })}\n`,
      );
      return 0;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** A copy that stopped: at which table, after how many of its rows, and why. */
export class CopyStopped extends Error {
  constructor(table: string, copied: number, cause: unknown) {
    // The driver's own words (drizzle's error would add the whole statement and its values: hashes, sealed secrets).
    const driver = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause;
    const why = driver instanceof Error ? driver.message : String(driver);
    super(
      `stopped at table ${table} after ${copied} of its rows: ${why}. The tables before it are copied; copy into a new database (or an earlier copy of this one), or remove the cause, and run the copy again`,
      { cause },
    );
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
    for (const [field, column] of Object.entries(to.columns))
      if (!entry.key.includes(field)) set[field] = sql.raw(`excluded."${column.name}"`);
    let count = 0;
    for (let last: Row | undefined; ;) {
      const rows: Row[] = await source.db
        .select()
        .from(from.table as never)
        .where(afterKey(entry, from.key, last))
        .orderBy(...(from.key as never[]))
        .limit(batch);
      if (rows.length === 0) break;
      try {
        await target.transaction(function* (tx) {
          yield tx
            .insert(to.table as never)
            .values(rows as never)
            .onConflictDoUpdate({ target: to.key as never, set });
        });
      } catch (e) {
        // A row the target refuses: another row there holds the same unique value (a user name, a token digest).
        throw new CopyStopped(entry.name, count, e);
      }
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
