import { doublePrecision, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { SameRow } from "../db/columns";

/**
 * The shared token buckets of replicas on one PostgreSQL store (shared.ts): one row per bucket, its `tat` (bucket.ts),
 * updated in one conditional statement. No row: a full bucket. SQLite keeps its buckets in memory (local.ts) and
 * has the table only because every table is defined for both stores.
 */
export const rate_buckets = sqliteTable("rate_buckets", {
  /** u:<user id>, c:<connector id> or t:<connector id>:<tool name> (service.ts). */
  key: text("key").primaryKey(),
  /** Milliseconds since the epoch (fractional: a rate's interval need not be whole milliseconds). */
  tat: real("tat").notNull(),
});

export const rate_bucketsPg = pgTable("rate_buckets", {
  key: pgText("key").primaryKey(),
  tat: doublePrecision("tat").notNull(),
});

export const RATE_ROWS_MATCH: SameRow<typeof rate_buckets, typeof rate_bucketsPg> = true;
