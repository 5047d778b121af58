import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { connectors } from "../connectors/table";
import type { GrantContext, StateContext, TokenEndpointAuthMethod } from "./model";

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
    token_endpoint_auth_method: text("token_endpoint_auth_method").$type<TokenEndpointAuthMethod>().notNull(),
    created_at: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.issuer, table.redirect_uri] })],
);

/** A pending authorization ([RFC 6749 §4.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1)): found by the digest of its single-use `state`. */
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
    context: text("context", { mode: "json" }).$type<StateContext>().notNull(),
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
    context: text("context", { mode: "json" }).$type<GrantContext>().notNull(),
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
