import {
  index as pgIndex,
  integer as pgInteger,
  pgTable,
  primaryKey as pgPrimaryKey,
  text as pgText,
  uniqueIndex as pgUniqueIndex,
} from "drizzle-orm/pg-core";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { connectors, connectorsPg } from "../connectors/table";
import { millis, timestamps, timestampsPg, type SameRow } from "../db/columns";
import { users, usersPg } from "../users/table";
import { FAILURE_MODES, TOOL_MODES } from "./model";

/** docs/interface.md §9.1: a virtual server goes with its owner (the users row's cascade). */
export const virtual_servers = sqliteTable(
  "virtual_servers",
  {
    id: text("id").primaryKey(),
    owner_id: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    failure_mode: text("failure_mode", { enum: FAILURE_MODES }).notNull(),
    tool_mode: text("tool_mode", { enum: TOOL_MODES }).notNull(),
    ...timestamps,
  },
  (table) => [
    index("virtual_servers_owner_created_idx").on(table.owner_id, table.created_at, table.id),
    index("virtual_servers_created_idx").on(table.created_at, table.id),
  ],
);

export const virtual_serversPg = pgTable(
  "virtual_servers",
  {
    id: pgText("id").primaryKey(),
    owner_id: pgText("owner_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    name: pgText("name").notNull(),
    description: pgText("description"),
    failure_mode: pgText("failure_mode", { enum: FAILURE_MODES }).notNull(),
    tool_mode: pgText("tool_mode", { enum: TOOL_MODES }).notNull(),
    ...timestampsPg,
  },
  (table) => [
    pgIndex("virtual_servers_owner_created_idx").on(table.owner_id, table.created_at, table.id),
    pgIndex("virtual_servers_created_idx").on(table.created_at, table.id),
  ],
);

/**
 * A virtual server's members in their order. A deleted connector leaves every virtual server by the foreign key's
 * cascade, in the delete's own statement: no path that deletes a connector can forget it. The prefix is stored as
 * resolved (a default one included), so renaming the connector later never renames the tools clients use; one prefix
 * per virtual server, "" too (the unique index).
 */
export const virtual_server_members = sqliteTable(
  "virtual_server_members",
  {
    virtual_server_id: text("virtual_server_id")
      .notNull()
      .references(() => virtual_servers.id, { onDelete: "cascade" }),
    connector_id: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    prefix: text("prefix").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.virtual_server_id, table.connector_id] }),
    uniqueIndex("virtual_server_members_prefix_idx").on(table.virtual_server_id, table.prefix),
    index("virtual_server_members_connector_idx").on(table.connector_id),
  ],
);

export const virtual_server_membersPg = pgTable(
  "virtual_server_members",
  {
    virtual_server_id: pgText("virtual_server_id")
      .notNull()
      .references(() => virtual_serversPg.id, { onDelete: "cascade" }),
    connector_id: pgText("connector_id")
      .notNull()
      .references(() => connectorsPg.id, { onDelete: "cascade" }),
    position: pgInteger("position").notNull(),
    prefix: pgText("prefix").notNull(),
  },
  (table) => [
    pgPrimaryKey({ columns: [table.virtual_server_id, table.connector_id] }),
    pgUniqueIndex("virtual_server_members_prefix_idx").on(table.virtual_server_id, table.prefix),
    pgIndex("virtual_server_members_connector_idx").on(table.connector_id),
  ],
);

export const VIRTUAL_SERVER_ROWS_MATCH: SameRow<typeof virtual_servers, typeof virtual_serversPg> &
  SameRow<typeof virtual_server_members, typeof virtual_server_membersPg> = true;

/**
 * A client session of a virtual server's MCP endpoint, in the store so that any replica answers its requests (issue 24
 * item 5: no sticky sessions). Its id is the Mcp-Session-Id the client holds; it goes with its virtual server and its
 * user. `used_at` is written at most once a minute (sessions.ts), enough for the idle limit of 30 minutes.
 */
export const virtual_sessions = sqliteTable(
  "virtual_sessions",
  {
    id: text("id").primaryKey(),
    virtual_server_id: text("virtual_server_id")
      .notNull()
      .references(() => virtual_servers.id, { onDelete: "cascade" }),
    user_id: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    protocol_version: text("protocol_version").notNull(),
    /** The client's capabilities at initialize, as JSON. */
    capabilities: text("capabilities").notNull(),
    created_at: integer("created_at").notNull(),
    used_at: integer("used_at").notNull(),
  },
  (table) => [index("virtual_sessions_used_idx").on(table.used_at)],
);

export const virtual_sessionsPg = pgTable(
  "virtual_sessions",
  {
    id: pgText("id").primaryKey(),
    virtual_server_id: pgText("virtual_server_id")
      .notNull()
      .references(() => virtual_serversPg.id, { onDelete: "cascade" }),
    user_id: pgText("user_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    protocol_version: pgText("protocol_version").notNull(),
    capabilities: pgText("capabilities").notNull(),
    created_at: millis("created_at").notNull(),
    used_at: millis("used_at").notNull(),
  },
  (table) => [pgIndex("virtual_sessions_used_idx").on(table.used_at)],
);

/**
 * The upstream session a client session holds with one member: the member's Mcp-Session-Id (sealed: it lets whoever
 * holds it act in that session), the version and capabilities it agreed — what another replica needs to go on in it
 * without a second initialize.
 */
export const virtual_session_members = sqliteTable(
  "virtual_session_members",
  {
    session_id: text("session_id")
      .notNull()
      .references(() => virtual_sessions.id, { onDelete: "cascade" }),
    connector_id: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    upstream_session: text("upstream_session"),
    protocol_version: text("protocol_version"),
    capabilities: text("capabilities"),
  },
  (table) => [primaryKey({ columns: [table.session_id, table.connector_id] })],
);

export const virtual_session_membersPg = pgTable(
  "virtual_session_members",
  {
    session_id: pgText("session_id")
      .notNull()
      .references(() => virtual_sessionsPg.id, { onDelete: "cascade" }),
    connector_id: pgText("connector_id")
      .notNull()
      .references(() => connectorsPg.id, { onDelete: "cascade" }),
    upstream_session: pgText("upstream_session"),
    protocol_version: pgText("protocol_version"),
    capabilities: pgText("capabilities"),
  },
  (table) => [pgPrimaryKey({ columns: [table.session_id, table.connector_id] })],
);

export const VIRTUAL_SESSION_ROWS_MATCH: SameRow<typeof virtual_sessions, typeof virtual_sessionsPg> &
  SameRow<typeof virtual_session_members, typeof virtual_session_membersPg> = true;
