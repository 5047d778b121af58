import { index as pgIndex, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, type SameRow } from "../db/columns";
import { connectors, connectorsPg } from "../connectors/table";
import { users, usersPg } from "../users/table";

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

/**
 * The sessions the proxy keeps for 2025 clients of servers that speak only 2026-07-28 (legacy-sessions.ts), so that any
 * replica answers a session's requests (no sticky sessions): what a replica needs to take a session up that another
 * opened — whose it is and the client's `initialize` — and the level `logging/setLevel` chose. The id is the
 * Mcp-Session-Id the client holds. `used_at` is written at most once a minute, enough for the idle limit (30 min).
 */
export const legacy_sessions = sqliteTable(
  "legacy_sessions",
  {
    id: text("id").primaryKey(),
    connector_id: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    user_id: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** A digest of everything the caller's access depends on (legacy-sessions.ts `ownerOf`): another caller's finds nothing. */
    owner: text("owner").notNull(),
    /** The client's initialize as the session agreed it: clientInfo, capabilities, protocolVersion, policy (JSON). */
    init: text("init").notNull(),
    log_level: text("log_level"),
    created_at: integer("created_at").notNull(),
    used_at: integer("used_at").notNull(),
  },
  (table) => [index("legacy_sessions_used_idx").on(table.used_at), index("legacy_sessions_user_idx").on(table.user_id)],
);

export const legacy_sessionsPg = pgTable(
  "legacy_sessions",
  {
    id: pgText("id").primaryKey(),
    connector_id: pgText("connector_id")
      .notNull()
      .references(() => connectorsPg.id, { onDelete: "cascade" }),
    user_id: pgText("user_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    owner: pgText("owner").notNull(),
    init: pgText("init").notNull(),
    log_level: pgText("log_level"),
    created_at: millis("created_at").notNull(),
    used_at: millis("used_at").notNull(),
  },
  (table) => [pgIndex("legacy_sessions_used_idx").on(table.used_at), pgIndex("legacy_sessions_user_idx").on(table.user_id)],
);

export const LEGACY_SESSION_ROWS_MATCH: SameRow<typeof legacy_sessions, typeof legacy_sessionsPg> = true;
