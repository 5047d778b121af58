import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
    /** How the proxy authenticates to the server once connected: stored headers, an OAuth grant, or nothing. */
    auth_method: text("auth_method", { enum: ["none", "headers", "oauth"] }).notNull().default("none"),
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

/**
 * OAuth clients the service registered itself (RFC 7591), per authorization server issuer and callback
 * URL: reused for every connector of that issuer, never sent to another.
 */
export const oauth_clients = sqliteTable(
  "oauth_clients",
  {
    issuer: text("issuer").notNull(),
    redirect_uri: text("redirect_uri").notNull(),
    client_id: text("client_id").notNull(),
    /** Sealed. */
    client_secret: text("client_secret"),
    token_endpoint_auth_method: text("token_endpoint_auth_method").notNull(),
    created_at: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.issuer, table.redirect_uri] })],
);

/** A pending authorization (RFC 6749 §4.1): found by the digest of its single-use `state`. */
export const oauth_states = sqliteTable(
  "oauth_states",
  {
    state_digest: text("state_digest").primaryKey(),
    connector_id: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    /** Sealed JSON: PKCE verifier and the client's credentials for the token request. */
    secrets: text("secrets").notNull(),
    /** JSON: authorization server metadata, client id and auth method, resource, scope, redirect URIs. */
    context: text("context", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    expires_at: integer("expires_at").notNull(),
    created_at: integer("created_at").notNull(),
  },
  (table) => [index("oauth_states_expires_idx").on(table.expires_at)],
);

/** The OAuth grant of a connected connector: tokens (sealed) and what refreshing them needs. */
export const oauth_grants = sqliteTable(
  "oauth_grants",
  {
    connector_id: text("connector_id")
      .primaryKey()
      .references(() => connectors.id, { onDelete: "cascade" }),
    /** JSON: authorization server metadata, client id and auth method, resource, scope. */
    context: text("context", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** Sealed JSON: access token, refresh token, client secret. */
    secrets: text("secrets").notNull(),
    expires_at: integer("expires_at"),
    /** When the scheduler should refresh next; null when the grant cannot be refreshed. */
    refresh_at: integer("refresh_at"),
    failures: integer("failures").notNull().default(0),
    /** Lease: the process refreshing this grant and until when (so two processes never refresh it together). */
    lease_owner: text("lease_owner"),
    lease_until: integer("lease_until"),
    updated_at: integer("updated_at").notNull(),
  },
  (table) => [index("oauth_grants_refresh_idx").on(table.refresh_at)],
);

/** A2A agent providers (issue #6): the agent's card, as registered or last fetched. */
export const providers = sqliteTable("providers", {
  id: text("id").primaryKey(),
  agent_card_url: text("agent_card_url"),
  /** The validated card as the agent publishes it (JSON). Not secret. */
  card: text("card", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  refreshed_at: integer("refreshed_at").notNull(),
  refresh_error: text("refresh_error"),
  ...timestamps,
});
