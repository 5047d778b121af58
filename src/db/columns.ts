import { bigint } from "drizzle-orm/pg-core";
import { integer } from "drizzle-orm/sqlite-core";

/** Times are integer milliseconds since the epoch, from the injected clock. */
export const timestamps = {
  created_at: integer("created_at").notNull(),
  updated_at: integer("updated_at").notNull(),
};

/** Milliseconds since the epoch in PostgreSQL: past 2^31, so bigint, read as a JavaScript number. */
export const millis = (name: string) => bigint(name, { mode: "number" });

export const timestampsPg = {
  created_at: millis("created_at").notNull(),
  updated_at: millis("updated_at").notNull(),
};

/**
 * A feature defines each table twice, once per dialect (the migrations are per dialect anyway); the repositories are
 * written once, so both must give rows of one type. `SameRow<typeof a, typeof b>` fails to compile when they do not.
 */
export type SameRow<
  A extends { $inferSelect: unknown; $inferInsert: unknown },
  B extends { $inferSelect: unknown; $inferInsert: unknown },
> = Same<A["$inferSelect"], B["$inferSelect"]> extends true ? Same<A["$inferInsert"], B["$inferInsert"]> : never;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
