import { sql } from "drizzle-orm";
import { check as pgCheck, index as pgIndex, jsonb, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { check, index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, type SameRow } from "../db/columns";
import { connectors, connectorsPg } from "../connectors/table";
import { users, usersPg } from "../users/table";
import { virtual_servers, virtual_serversPg } from "../virtual-servers/table";
import type { AuthorizationParams, ClientMetadata } from "./model";

// The service as an OAuth 2.1 authorization server for its own MCP proxy URLs: the MCP clients that registered (or
// are known by a metadata document), the authorizations in progress, the codes, the grants people gave, the tokens.
// Codes, tokens and request handles are stored as SHA-256 digests, never as themselves.

/** A client: registered (RFC 7591) or known by its Client ID Metadata Document (an https client_id). */
export const as_clients = sqliteTable("as_clients", {
  client_id: text("client_id").primaryKey(),
  kind: text("kind", { enum: ["registered", "metadata-document"] }).notNull(),
  metadata: text("metadata", { mode: "json" }).$type<ClientMetadata>().notNull(),
  created_at: integer("created_at").notNull(),
  /** A registered client never used is removed after a while; a metadata document is fetched again after it. */
  expires_at: integer("expires_at"),
  last_used_at: integer("last_used_at"),
  /** Where a registration came from (its client's address group) while it has not been used: bounds what one address keeps. */
  registered_from: text("registered_from"),
});

/** An authorization request between the authorization endpoint and the person's consent (10 minutes). */
export const as_requests = sqliteTable("as_requests", {
  handle_digest: text("handle_digest").primaryKey(),
  params: text("params", { mode: "json" }).$type<AuthorizationParams>().notNull(),
  /** Set once the person signed in: consent is theirs to give. */
  user_id: text("user_id").references(() => users.id, { onDelete: "cascade" }),
  expires_at: integer("expires_at").notNull(),
});

/** RFC 8707: a grant's tokens are for one resource, a connector's proxy URL or a virtual server's MCP URL. */
const ONE_RESOURCE = sql`(connector_id IS NULL) <> (virtual_server_id IS NULL)`;

/** What a person allowed a client: the connector or virtual server it may reach. Revoking it ends every token at once. */
export const as_grants = sqliteTable(
  "as_grants",
  {
    id: text("id").primaryKey(),
    user_id: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    client_id: text("client_id").notNull(),
    /** The connector whose proxy URL the tokens are for (deleting it ends the grant). */
    connector_id: text("connector_id").references(() => connectors.id, { onDelete: "cascade" }),
    /** Or the virtual server whose MCP URL they are for (deleting it ends the grant). */
    virtual_server_id: text("virtual_server_id").references(() => virtual_servers.id, { onDelete: "cascade" }),
    scope: text("scope"),
    created_at: integer("created_at").notNull(),
    last_used_at: integer("last_used_at"),
  },
  (table) => [index("as_grants_user_idx").on(table.user_id), check("as_grants_one_resource", ONE_RESOURCE)],
);

/** Authorization codes (single use, 1 minute), access and refresh tokens: each bound to a grant. */
export const as_tokens = sqliteTable(
  "as_tokens",
  {
    digest: text("digest").primaryKey(),
    grant_id: text("grant_id")
      .notNull()
      .references(() => as_grants.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["code", "access", "refresh"] }).notNull(),
    /** For a code: what the token request must repeat (PKCE challenge, redirect URI). */
    code_challenge: text("code_challenge"),
    redirect_uri: text("redirect_uri"),
    expires_at: integer("expires_at").notNull(),
    /** A refresh token already exchanged: presented again, it revokes the grant (a stolen token, OAuth 2.1 §4.3.1). */
    used_at: integer("used_at"),
    created_at: integer("created_at").notNull(),
  },
  (table) => [index("as_tokens_grant_idx").on(table.grant_id), index("as_tokens_expires_idx").on(table.expires_at)],
);

export const as_clientsPg = pgTable("as_clients", {
  client_id: pgText("client_id").primaryKey(),
  kind: pgText("kind", { enum: ["registered", "metadata-document"] }).notNull(),
  metadata: jsonb("metadata").$type<ClientMetadata>().notNull(),
  created_at: millis("created_at").notNull(),
  expires_at: millis("expires_at"),
  last_used_at: millis("last_used_at"),
  registered_from: pgText("registered_from"),
});

export const as_requestsPg = pgTable("as_requests", {
  handle_digest: pgText("handle_digest").primaryKey(),
  params: jsonb("params").$type<AuthorizationParams>().notNull(),
  user_id: pgText("user_id").references(() => usersPg.id, { onDelete: "cascade" }),
  expires_at: millis("expires_at").notNull(),
});

export const as_grantsPg = pgTable(
  "as_grants",
  {
    id: pgText("id").primaryKey(),
    user_id: pgText("user_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    client_id: pgText("client_id").notNull(),
    connector_id: pgText("connector_id").references(() => connectorsPg.id, { onDelete: "cascade" }),
    virtual_server_id: pgText("virtual_server_id").references(() => virtual_serversPg.id, { onDelete: "cascade" }),
    scope: pgText("scope"),
    created_at: millis("created_at").notNull(),
    last_used_at: millis("last_used_at"),
  },
  (table) => [pgIndex("as_grants_user_idx").on(table.user_id), pgCheck("as_grants_one_resource", ONE_RESOURCE)],
);

export const as_tokensPg = pgTable(
  "as_tokens",
  {
    digest: pgText("digest").primaryKey(),
    grant_id: pgText("grant_id")
      .notNull()
      .references(() => as_grantsPg.id, { onDelete: "cascade" }),
    kind: pgText("kind", { enum: ["code", "access", "refresh"] }).notNull(),
    code_challenge: pgText("code_challenge"),
    redirect_uri: pgText("redirect_uri"),
    expires_at: millis("expires_at").notNull(),
    used_at: millis("used_at"),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgIndex("as_tokens_grant_idx").on(table.grant_id), pgIndex("as_tokens_expires_idx").on(table.expires_at)],
);

export const AUTHSERVER_ROWS_MATCH: SameRow<typeof as_clients, typeof as_clientsPg> &
  SameRow<typeof as_requests, typeof as_requestsPg> &
  SameRow<typeof as_grants, typeof as_grantsPg> &
  SameRow<typeof as_tokens, typeof as_tokensPg> = true;
