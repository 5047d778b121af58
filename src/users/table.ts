import { index as pgIndex, integer as pgInteger, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, timestamps, timestampsPg, type SameRow } from "../db/columns";
import { ROLES } from "./model";

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  username: text("username").notNull().unique(),
  /** argon2id (Bun.password) PHC string. */
  password_hash: text("password_hash").notNull(),
  role: text("role", { enum: ROLES }).notNull(),
  /** Set while an administrator has disabled the user: no way in (password, tokens, console, OAuth grants). */
  disabled_at: integer("disabled_at"),
  /** An administrator's override of RATE__USER_REQUESTS_PER_MINUTE for this user; null: the default. */
  requests_per_minute: integer("requests_per_minute"),
  ...timestamps,
});

export const api_tokens = sqliteTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    user_id: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** SHA-256 of the token (hex); tokens are 256-bit random, so a plain digest suffices. */
    token_digest: text("token_digest").notNull().unique(),
    expires_at: integer("expires_at"),
    created_at: integer("created_at").notNull(),
  },
  (table) => [index("api_tokens_user_idx").on(table.user_id)],
);

/** The web console's sign-ins: the cookie's value is known only to the browser; the row keeps its SHA-256 digest. */
export const sessions = sqliteTable(
  "sessions",
  {
    digest: text("digest").primaryKey(),
    user_id: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    expires_at: integer("expires_at").notNull(),
    created_at: integer("created_at").notNull(),
  },
  (table) => [index("sessions_user_idx").on(table.user_id)],
);

// PostgreSQL (DATABASE__URL): the same tables, the same rows.
export const usersPg = pgTable("users", {
  id: pgText("id").primaryKey(),
  username: pgText("username").notNull().unique(),
  password_hash: pgText("password_hash").notNull(),
  role: pgText("role", { enum: ROLES }).notNull(),
  disabled_at: millis("disabled_at"),
  requests_per_minute: pgInteger("requests_per_minute"),
  ...timestampsPg,
});

export const api_tokensPg = pgTable(
  "api_tokens",
  {
    id: pgText("id").primaryKey(),
    user_id: pgText("user_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    name: pgText("name").notNull(),
    token_digest: pgText("token_digest").notNull().unique(),
    expires_at: millis("expires_at"),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgIndex("api_tokens_user_idx").on(table.user_id)],
);

export const sessionsPg = pgTable(
  "sessions",
  {
    digest: pgText("digest").primaryKey(),
    user_id: pgText("user_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    expires_at: millis("expires_at").notNull(),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgIndex("sessions_user_idx").on(table.user_id)],
);

export const USERS_ROWS_MATCH: SameRow<typeof users, typeof usersPg> &
  SameRow<typeof api_tokens, typeof api_tokensPg> &
  SameRow<typeof sessions, typeof sessionsPg> = true;
