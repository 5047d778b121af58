import { integer } from "drizzle-orm/sqlite-core";

/** Times are integer milliseconds since the epoch, from the injected clock. */
export const timestamps = {
  created_at: integer("created_at").notNull(),
  updated_at: integer("updated_at").notNull(),
};
