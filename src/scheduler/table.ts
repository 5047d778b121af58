import { bigint, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { SameRow } from "../db/columns";

/** Which process runs a scheduled job now, and until when (replicas share the work: one at a time per job). */
export const job_leases = sqliteTable("job_leases", {
  name: text("name").primaryKey(),
  owner: text("owner").notNull(),
  until: integer("until").notNull(),
});

export const job_leasesPg = pgTable("job_leases", {
  name: pgText("name").primaryKey(),
  owner: pgText("owner").notNull(),
  until: bigint("until", { mode: "number" }).notNull(),
});

export const JOB_LEASE_ROWS_MATCH: SameRow<typeof job_leases, typeof job_leasesPg> = true;
