/**
 * What one audit record costs SQLite, by the shape of the table: the insert the audit writer runs (100 rows per
 * statement, one transaction per batch, WAL, synchronous=NORMAL as src/db/sqlite.ts sets them) into the table as
 * migrated, without its time index, as WITHOUT ROWID, and with no secondary index at all — to tell what the indexes
 * the listing needs cost per proxied call.
 *
 *   bun bench/audit-rows.ts [--batches 2000] [--rounds 2]
 *
 * Writes throwaway databases in a temporary directory, removed at the end.
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AUDIT_COLUMNS } from "../src/audit/repository";

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const BATCHES = Number(args.get("batches") ?? 2000);
const ROUNDS = Number(args.get("rounds") ?? 2);
const ROWS = 100;

const COLUMNS = AUDIT_COLUMNS;
const table = (suffix = "") =>
  `CREATE TABLE audit_records (id text PRIMARY KEY NOT NULL, at integer NOT NULL, user_id text NOT NULL, credential text,
   connector_id text NOT NULL, method text, name text, outcome text NOT NULL, error_code integer, http_status integer NOT NULL,
   duration_ms integer NOT NULL, request_bytes integer NOT NULL, response_bytes integer NOT NULL, captured text,
   virtual_server_id text)${suffix}`;
// The indexes of drizzle/sqlite/0010_audit.sql and 0013_audit_virtual_server.sql.
const AT = "CREATE INDEX audit_at_idx ON audit_records (at)";
const BY_CONNECTOR = "CREATE INDEX audit_connector_idx ON audit_records (connector_id, id)";
const BY_USER = "CREATE INDEX audit_user_idx ON audit_records (user_id, id)";
const BY_VIRTUAL_SERVER =
  "CREATE INDEX audit_virtual_server_idx ON audit_records (virtual_server_id, id) WHERE virtual_server_id IS NOT NULL";

const VARIANTS: [string, string[]][] = [
  ["as migrated", [table(), AT, BY_CONNECTOR, BY_USER, BY_VIRTUAL_SERVER]],
  ["without the time index", [table(), BY_CONNECTOR, BY_USER]],
  ["WITHOUT ROWID", [table(" WITHOUT ROWID"), AT, BY_CONNECTOR, BY_USER]],
  ["no secondary index", [table()]],
];

const work = mkdtempSync(join(tmpdir(), "cs-audit-rows-"));

/** Microseconds per row inserted, the rows' values made beforehand (what the writer has queued). */
function run(name: string, ddl: string[], round: number): number {
  const db = new Database(join(work, `${round}-${name.replace(/\W+/g, "-")}.db`));
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  for (const statement of ddl) db.exec(statement);
  const row = `(${COLUMNS.map(() => "?").join(",")})`;
  const insert = db.prepare(`INSERT INTO audit_records (${COLUMNS.join(",")}) VALUES ${Array(ROWS).fill(row).join(",")}`);
  const batches = Array.from({ length: BATCHES }, () =>
    Array.from({ length: ROWS }, (_, r) => [
      Bun.randomUUIDv7(),
      Date.now(),
      "0193a9b2-0000-7000-8000-000000000001",
      "token:0193a9b2",
      `0193a9b2-0000-7000-8000-00000000001${r % 4}`,
      "tools/call",
      "echo",
      "result",
      null,
      200,
      1,
      160,
      200,
      null,
      null,
    ]).flat(),
  );
  const write = db.transaction((params: unknown[]) => insert.run(...(params as never[])));
  const started = performance.now();
  for (const params of batches) write(params);
  const perRow = ((performance.now() - started) * 1000) / (BATCHES * ROWS);
  db.close();
  return perRow;
}

try {
  const results = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, ddl] of VARIANTS) results.set(name, [...(results.get(name) ?? []), run(name, ddl, round)]);
  console.log(`audit rows: ${BATCHES} batches of ${ROWS} rows, ${ROUNDS} rounds (µs per row, each round)`);
  for (const [name, times] of results) console.log(`${name.padEnd(24)} ${times.map((t) => t.toFixed(2)).join("  ")}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
