import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Times are integer milliseconds since the epoch, from the injected clock. */
const timestamps = {
  created_at: integer("created_at").notNull(),
  updated_at: integer("updated_at").notNull(),
};

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  username: text("username").notNull().unique(),
  /** argon2id (Bun.password) PHC string. */
  password_hash: text("password_hash").notNull(),
  role: text("role", { enum: ["admin", "user"] }).notNull(),
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

export const connectors = sqliteTable(
  "connectors",
  {
    id: text("id").primaryKey(),
    owner_id: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    state: text("state", { enum: ["created", "auth_required", "connected", "disconnected"] }).notNull(),
    disconnect_reason: text("disconnect_reason"),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>().notNull().default(sql`'{}'`),
    /** URL of the matched preset, as the preset spells it. */
    preset_url: text("preset_url"),
    client_id: text("client_id"),
    /** Sealed (secrets/sealer.ts). */
    client_secret: text("client_secret"),
    /** Sealed JSON object of the connect request's headers. */
    headers: text("headers"),
    header_names: text("header_names", { mode: "json" }).$type<string[]>(),
    /** Sealed access token for a managed stdio deployment. */
    access_token: text("access_token"),
    authorization_url: text("authorization_url"),
    redirect_url: text("redirect_url"),
    ...timestamps,
  },
  (table) => [
    index("connectors_owner_created_idx").on(table.owner_id, table.created_at, table.id),
    index("connectors_created_idx").on(table.created_at, table.id),
  ],
);
