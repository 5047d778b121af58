import { sql } from "drizzle-orm";
import { bigserial, index as pgIndex, jsonb, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, timestamps, timestampsPg, type SameRow } from "../db/columns";
import type { Metadata } from "../presets/model";
import { users, usersPg } from "../users/table";
import { AUTH_METHODS, CONNECTOR_EVENT_TYPES, CONNECTOR_STATES, type ConnectorEventData, type ToolPolicy } from "./model";

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
    metadata: text("metadata", { mode: "json" }).$type<Metadata>().notNull().default(sql`'{}'`),
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
    /** Which tools clients see and call (proxy/tool-policy.ts); null: all. */
    tool_policy: text("tool_policy", { mode: "json" }).$type<ToolPolicy>(),
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
    metadata: jsonb("metadata").$type<Metadata>().notNull().default(sql`'{}'::jsonb`),
    preset_url: pgText("preset_url"),
    client_id: pgText("client_id"),
    client_secret: pgText("client_secret"),
    headers: pgText("headers"),
    header_names: jsonb("header_names").$type<string[]>(),
    access_token: pgText("access_token"),
    authorization_url: pgText("authorization_url"),
    redirect_url: pgText("redirect_url"),
    tool_policy: jsonb("tool_policy").$type<ToolPolicy>(),
    ...timestampsPg,
  },
  (table) => [
    pgIndex("connectors_owner_created_idx").on(table.owner_id, table.created_at, table.id),
    pgIndex("connectors_created_idx").on(table.created_at, table.id),
  ],
);

/**
 * What happened to connectors, in order: written in the same transaction as the change, so no change goes
 * unannounced and none is announced that did not happen. Read by the events stream and the webhooks; kept for a
 * bounded window (events/feed.ts). No foreign key: a deleted connector's last event outlives it.
 */
export const connector_events = sqliteTable(
  "connector_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    type: text("type", { enum: CONNECTOR_EVENT_TYPES }).notNull(),
    connector_id: text("connector_id").notNull(),
    owner_id: text("owner_id").notNull(),
    data: text("data", { mode: "json" }).$type<ConnectorEventData>().notNull(),
    created_at: integer("created_at").notNull(),
  },
  (table) => [index("connector_events_created_idx").on(table.created_at)],
);

export const connector_eventsPg = pgTable(
  "connector_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    type: pgText("type", { enum: CONNECTOR_EVENT_TYPES }).notNull(),
    connector_id: pgText("connector_id").notNull(),
    owner_id: pgText("owner_id").notNull(),
    data: jsonb("data").$type<ConnectorEventData>().notNull(),
    created_at: millis("created_at").notNull(),
  },
  (table) => [pgIndex("connector_events_created_idx").on(table.created_at)],
);

export const CONNECTOR_ROWS_MATCH: SameRow<typeof connectors, typeof connectorsPg> & SameRow<typeof connector_events, typeof connector_eventsPg> = true;
