import { sql } from "drizzle-orm";
import { bigserial, index as pgIndex, jsonb, pgTable, primaryKey as pgPrimaryKey, text as pgText } from "drizzle-orm/pg-core";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, timestamps, timestampsPg, type SameRow } from "../db/columns";
import type { Metadata } from "../presets/model";
import type { RateLimits } from "../rate-limits/model";
import { users, usersPg } from "../users/table";
import {
  AUTH_METHODS,
  CONNECTOR_STATES,
  EVENT_TYPES,
  type ConnectorEventData,
  type VirtualServerEventData,
  type ToolChange,
  type ToolDefinition,
  type ToolPolicy,
} from "./model";

export const connectors = sqliteTable(
  "connectors",
  {
    id: text("id").primaryKey(),
    owner_id: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    state: text("state", { enum: CONNECTOR_STATES }).notNull(),
    /** How the proxy authenticates to the server once connected: stored headers, an OAuth grant, or nothing. */
    auth_method: text("auth_method", { enum: AUTH_METHODS }).notNull().default("none"),
    disconnect_reason: text("disconnect_reason"),
    metadata: text("metadata", { mode: "json" })
      .$type<Metadata>()
      .notNull()
      .default(sql`'{}'`),
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
    /** Which tools clients see and call (tool-policy.ts; the proxy applies it in proxy/tool-filter.ts); null: all. */
    tool_policy: text("tool_policy", { mode: "json" }).$type<ToolPolicy>(),
    /** When the first whole listing of the server's tools was pinned (connector_tools); null: not yet. */
    tools_pinned_at: integer("tools_pinned_at"),
    /** Tools whose definition differs from the approved one (kept with the pins, for the connector's view). */
    tool_changes: text("tool_changes", { mode: "json" }).$type<ToolChange[]>(),
    /** The MCP revisions the server speaks, found at connect (upstream/handshake.ts); null: not known (connected before). */
    protocol_versions: text("protocol_versions", { mode: "json" }).$type<string[]>(),
    /** Token buckets on the requests to its proxy URL and on single tools' calls (rate-limits/model.ts); null: none. */
    rate_limits: text("rate_limits", { mode: "json" }).$type<RateLimits>(),
    ...timestamps,
  },
  (table) => [
    index("connectors_owner_created_idx").on(table.owner_id, table.created_at, table.id),
    index("connectors_created_idx").on(table.created_at, table.id),
  ],
);

export const connectorsPg = pgTable(
  "connectors",
  {
    id: pgText("id").primaryKey(),
    owner_id: pgText("owner_id")
      .notNull()
      .references(() => usersPg.id, { onDelete: "cascade" }),
    url: pgText("url").notNull(),
    state: pgText("state", { enum: CONNECTOR_STATES }).notNull(),
    auth_method: pgText("auth_method", { enum: AUTH_METHODS }).notNull().default("none"),
    disconnect_reason: pgText("disconnect_reason"),
    metadata: jsonb("metadata")
      .$type<Metadata>()
      .notNull()
      .default(sql`'{}'::jsonb`),
    preset_url: pgText("preset_url"),
    client_id: pgText("client_id"),
    client_secret: pgText("client_secret"),
    headers: pgText("headers"),
    header_names: jsonb("header_names").$type<string[]>(),
    access_token: pgText("access_token"),
    authorization_url: pgText("authorization_url"),
    redirect_url: pgText("redirect_url"),
    tool_policy: jsonb("tool_policy").$type<ToolPolicy>(),
    tools_pinned_at: millis("tools_pinned_at"),
    tool_changes: jsonb("tool_changes").$type<ToolChange[]>(),
    protocol_versions: jsonb("protocol_versions").$type<string[]>(),
    rate_limits: jsonb("rate_limits").$type<RateLimits>(),
    ...timestampsPg,
  },
  (table) => [
    pgIndex("connectors_owner_created_idx").on(table.owner_id, table.created_at, table.id),
    pgIndex("connectors_created_idx").on(table.created_at, table.id),
  ],
);

/**
 * What happened to connectors (and virtual servers: `connector_id` is then the virtual server's id), in order: written in the same transaction as the change, so no change goes
 * unannounced and none is announced that did not happen. Read by the events stream and the webhooks; kept for a
 * bounded window (events/feed.ts). No foreign key: a deleted connector's last event outlives it.
 */
export const connector_events = sqliteTable(
  "connector_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    type: text("type", { enum: EVENT_TYPES }).notNull(),
    connector_id: text("connector_id").notNull(),
    owner_id: text("owner_id").notNull(),
    data: text("data", { mode: "json" }).$type<ConnectorEventData | VirtualServerEventData>().notNull(),
    created_at: integer("created_at").notNull(),
  },
  (table) => [index("connector_events_created_idx").on(table.created_at)],
);

export const connector_eventsPg = pgTable(
  "connector_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    type: pgText("type", { enum: EVENT_TYPES }).notNull(),
    connector_id: pgText("connector_id").notNull(),
    owner_id: pgText("owner_id").notNull(),
    data: jsonb("data").$type<ConnectorEventData | VirtualServerEventData>().notNull(),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgIndex("connector_events_created_idx").on(table.created_at)],
);

/**
 * Tool pinning (proxy/tool-pins.ts): a digest of each tool's definition as the server last listed it, and the digest a
 * person approved (the first whole listing is approved as it is). They differ when a server changed a tool. The
 * definitions themselves are kept beside them, so the change can be shown (null for pins written before they were).
 */
export const connector_tools = sqliteTable(
  "connector_tools",
  {
    connector_id: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    digest: text("digest").notNull(),
    approved_digest: text("approved_digest"),
    /** The definitions behind the two digests, for a person comparing them (plain: a server's tools are no secret). */
    definition: text("definition", { mode: "json" }).$type<ToolDefinition>(),
    approved_definition: text("approved_definition", { mode: "json" }).$type<ToolDefinition>(),
    first_seen_at: integer("first_seen_at").notNull(),
    changed_at: integer("changed_at"),
  },
  (table) => [primaryKey({ columns: [table.connector_id, table.name] })],
);

export const connector_toolsPg = pgTable(
  "connector_tools",
  {
    connector_id: pgText("connector_id")
      .notNull()
      .references(() => connectorsPg.id, { onDelete: "cascade" }),
    name: pgText("name").notNull(),
    digest: pgText("digest").notNull(),
    approved_digest: pgText("approved_digest"),
    definition: jsonb("definition").$type<ToolDefinition>(),
    approved_definition: jsonb("approved_definition").$type<ToolDefinition>(),
    first_seen_at: millis("first_seen_at").notNull(),
    changed_at: millis("changed_at"),
  },
  (table) => [pgPrimaryKey({ columns: [table.connector_id, table.name] })],
);

export const CONNECTOR_ROWS_MATCH: SameRow<typeof connectors, typeof connectorsPg> &
  SameRow<typeof connector_events, typeof connector_eventsPg> &
  SameRow<typeof connector_tools, typeof connector_toolsPg> = true;
