import {
  index as pgIndex,
  integer as pgInteger,
  jsonb,
  pgTable,
  primaryKey as pgPrimaryKey,
  text as pgText,
} from "drizzle-orm/pg-core";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { connectors, connectorsPg } from "../connectors/table";
import { millis, type SameRow } from "../db/columns";
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
    /**
     * When the scheduler looks at the grant next: to refresh it, or (no refresh token) at its expiry, to disconnect it
     * with a reason. Null: never (a token without expiry, or a refresh that failed for good).
     */
    refresh_at: integer("refresh_at"),
    failures: integer("failures").notNull().default(0),
    /** Lease: the process refreshing this grant and until when (so two processes never refresh it together). */
    lease_owner: text("lease_owner"),
    lease_until: integer("lease_until"),
    updated_at: integer("updated_at").notNull(),
  },
  (table) => [index("oauth_grants_refresh_idx").on(table.refresh_at)],
);

export const oauth_clientsPg = pgTable(
  "oauth_clients",
  {
    issuer: pgText("issuer").notNull(),
    redirect_uri: pgText("redirect_uri").notNull(),
    client_id: pgText("client_id").notNull(),
    client_secret: pgText("client_secret"),
    token_endpoint_auth_method: pgText("token_endpoint_auth_method").$type<TokenEndpointAuthMethod>().notNull(),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgPrimaryKey({ columns: [table.issuer, table.redirect_uri] })],
);

export const oauth_statesPg = pgTable(
  "oauth_states",
  {
    state_digest: pgText("state_digest").primaryKey(),
    connector_id: pgText("connector_id")
      .notNull()
      .references(() => connectorsPg.id, { onDelete: "cascade" }),
    secrets: pgText("secrets").notNull(),
    context: jsonb("context").$type<StateContext>().notNull(),
    expires_at: millis("expires_at").notNull(),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgIndex("oauth_states_expires_idx").on(table.expires_at)],
);

export const oauth_grantsPg = pgTable(
  "oauth_grants",
  {
    connector_id: pgText("connector_id")
      .primaryKey()
      .references(() => connectorsPg.id, { onDelete: "cascade" }),
    context: jsonb("context").$type<GrantContext>().notNull(),
    secrets: pgText("secrets").notNull(),
    expires_at: millis("expires_at"),
    refresh_at: millis("refresh_at"),
    failures: pgInteger("failures").notNull().default(0),
    lease_owner: pgText("lease_owner"),
    lease_until: millis("lease_until"),
    updated_at: millis("updated_at").notNull(),
  },
  (table) => [pgIndex("oauth_grants_refresh_idx").on(table.refresh_at)],
);

export const OAUTH_ROWS_MATCH: SameRow<typeof oauth_clients, typeof oauth_clientsPg> &
  SameRow<typeof oauth_states, typeof oauth_statesPg> &
  SameRow<typeof oauth_grants, typeof oauth_grantsPg> = true;
