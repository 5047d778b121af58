import { pgTable, text as pgText } from "drizzle-orm/pg-core";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, type SameRow } from "../db/columns";

/** Where each webhook URL is in the connector events, and its retries: delivery resumes here on any replica. */
export const webhook_cursors = sqliteTable("webhook_cursors", {
  url: text("url").primaryKey(),
  /** The last event delivered (or given up on). */
  last_event_id: integer("last_event_id").notNull(),
  /** Failed attempts at the next event; 0 after a success. */
  attempts: integer("attempts").notNull(),
  next_attempt_at: integer("next_attempt_at").notNull(),
});

export const webhook_cursorsPg = pgTable("webhook_cursors", {
  url: pgText("url").primaryKey(),
  last_event_id: millis("last_event_id").notNull(),
  attempts: millis("attempts").notNull(),
  next_attempt_at: millis("next_attempt_at").notNull(),
});

export const WEBHOOK_ROWS_MATCH: SameRow<typeof webhook_cursors, typeof webhook_cursorsPg> = true;
