import { jsonb, pgTable, text as pgText } from "drizzle-orm/pg-core";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { millis, timestamps, timestampsPg, type SameRow } from "../db/columns";
import type { AgentCardInput } from "./model";

/** A2A agent providers: the agent's card, as registered or last fetched. */
export const providers = sqliteTable("providers", {
  id: text("id").primaryKey(),
  agent_card_url: text("agent_card_url"),
  /** The validated card as the agent publishes it (JSON). Not secret. */
  card: text("card", { mode: "json" }).$type<AgentCardInput>().notNull(),
  refreshed_at: integer("refreshed_at").notNull(),
  refresh_error: text("refresh_error"),
  ...timestamps,
});

export const providersPg = pgTable("providers", {
  id: pgText("id").primaryKey(),
  agent_card_url: pgText("agent_card_url"),
  card: jsonb("card").$type<AgentCardInput>().notNull(),
  refreshed_at: millis("refreshed_at").notNull(),
  refresh_error: pgText("refresh_error"),
  ...timestampsPg,
});

export const PROVIDER_ROWS_MATCH: SameRow<typeof providers, typeof providersPg> = true;
