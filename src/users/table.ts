import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { timestamps } from "../db/columns";
import { ROLES } from "./model";

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  username: text("username").notNull().unique(),
  /** argon2id (Bun.password) PHC string. */
  password_hash: text("password_hash").notNull(),
  role: text("role", { enum: ROLES }).notNull(),
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
