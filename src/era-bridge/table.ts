import { index as pgIndex, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, type SameRow } from "../db/columns";

/**
 * Retries of parked calls handed over between replicas on one PostgreSQL store (handoffs.ts): a 2026-07-28 client's
 * retry that reached a replica other than the one holding its call, until the holder answered it. Short-lived: the
 * replica that wrote a row deletes it once it has the answer or gives up; rows left by a replica that died are swept.
 * SQLite (one process) never writes one and has the table only because every table is defined for both stores.
 */
export const parked_handoffs = sqliteTable(
  "parked_handoffs",
  {
    id: text("id").primaryKey(),
    /** The bridges of the replica holding the call (the `requestState` names them): the only reader of the row. */
    holder: text("holder").notNull(),
    /** The caller's bridge there (bridges.ts: connector or virtual server, user, role, credential). */
    bridge: text("bridge").notNull(),
    /** The retry as the client sent it (its inputResponses may hold what the user typed), sealed. */
    message: text("message").notNull(),
    /** The holder's answer (the call's result, an error, or the next input_required), sealed; null until then. */
    answer: text("answer"),
    created_at: integer("created_at").notNull(),
    /** When the holder took the retry; null until then (a row nobody takes names no call held anywhere). */
    taken_at: integer("taken_at"),
    /** When the retrying client went away or stopped waiting: the holder cancels the call. */
    abandoned_at: integer("abandoned_at"),
  },
  (table) => [
    index("parked_handoffs_holder_idx").on(table.holder, table.taken_at),
    index("parked_handoffs_created_idx").on(table.created_at),
  ],
);

export const parked_handoffsPg = pgTable(
  "parked_handoffs",
  {
    id: pgText("id").primaryKey(),
    holder: pgText("holder").notNull(),
    bridge: pgText("bridge").notNull(),
    message: pgText("message").notNull(),
    answer: pgText("answer"),
    created_at: millis("created_at").notNull(),
    taken_at: millis("taken_at"),
    abandoned_at: millis("abandoned_at"),
  },
  (table) => [
    pgIndex("parked_handoffs_holder_idx").on(table.holder, table.taken_at),
    pgIndex("parked_handoffs_created_idx").on(table.created_at),
  ],
);

export const PARKED_HANDOFF_ROWS_MATCH: SameRow<typeof parked_handoffs, typeof parked_handoffsPg> = true;
