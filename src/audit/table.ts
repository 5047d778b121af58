import { isNotNull } from "drizzle-orm";
import { index as pgIndex, integer as pgInteger, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, type SameRow } from "../db/columns";
import { AUDIT_OUTCOMES } from "./model";

/**
 * One record per JSON-RPC message a client sent through the MCP proxy (docs/behaviour.md "Audit trail"): who, through which
 * credential, to which connector, what (method and tool, resource or prompt), how it ended, how long and how big.
 * Never arguments or results, unless AUDIT__CAPTURE=arguments (then `captured`, sealed).
 */
export const audit_records = sqliteTable(
  "audit_records",
  {
    /** UUIDv7: time-ordered, the cursor of the listing. */
    id: text("id").primaryKey(),
    at: integer("at").notNull(),
    user_id: text("user_id").notNull(),
    credential: text("credential"),
    connector_id: text("connector_id").notNull(),
    /** The virtual server the message came through (docs/interface.md §9.4), its member being connector_id; else null. */
    virtual_server_id: text("virtual_server_id"),
    method: text("method"),
    name: text("name"),
    /** result, error (a JSON-RPC error), http (the exchange ended on an HTTP status), or rate_limited. */
    outcome: text("outcome", { enum: AUDIT_OUTCOMES }).notNull(),
    error_code: integer("error_code"),
    http_status: integer("http_status").notNull(),
    duration_ms: integer("duration_ms").notNull(),
    request_bytes: integer("request_bytes").notNull(),
    response_bytes: integer("response_bytes").notNull(),
    captured: text("captured"),
  },
  (table) => [
    index("audit_at_idx").on(table.at),
    index("audit_connector_idx").on(table.connector_id, table.id),
    index("audit_user_idx").on(table.user_id, table.id),
    // Partial: messages sent straight to a proxy URL (most) cost this index nothing.
    index("audit_virtual_server_idx").on(table.virtual_server_id, table.id).where(isNotNull(table.virtual_server_id)),
  ],
);

export const audit_recordsPg = pgTable(
  "audit_records",
  {
    id: pgText("id").primaryKey(),
    at: millis("at").notNull(),
    user_id: pgText("user_id").notNull(),
    credential: pgText("credential"),
    connector_id: pgText("connector_id").notNull(),
    virtual_server_id: pgText("virtual_server_id"),
    method: pgText("method"),
    name: pgText("name"),
    outcome: pgText("outcome", { enum: AUDIT_OUTCOMES }).notNull(),
    error_code: pgInteger("error_code"),
    http_status: pgInteger("http_status").notNull(),
    duration_ms: pgInteger("duration_ms").notNull(),
    request_bytes: millis("request_bytes").notNull(),
    response_bytes: millis("response_bytes").notNull(),
    captured: pgText("captured"),
  },
  (table) => [
    pgIndex("audit_at_idx").on(table.at),
    pgIndex("audit_connector_idx").on(table.connector_id, table.id),
    pgIndex("audit_user_idx").on(table.user_id, table.id),
    pgIndex("audit_virtual_server_idx").on(table.virtual_server_id, table.id).where(isNotNull(table.virtual_server_id)),
  ],
);

export const AUDIT_ROWS_MATCH: SameRow<typeof audit_records, typeof audit_recordsPg> = true;
