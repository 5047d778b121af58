import { asc, eq, isNotNull, and, lt } from "drizzle-orm";
import type { Db } from "../db/open";
import { providers } from "../db/schema";

export type ProviderRow = typeof providers.$inferSelect;

export function createProviderRepository(db: Db) {
  return {
    insert: (row: ProviderRow) => db.insert(providers).values(row).run(),
    find: (id: string) => db.select().from(providers).where(eq(providers.id, id)).get(),
    list: () => db.select().from(providers).orderBy(asc(providers.created_at), asc(providers.id)).all(),
    update: (id: string, patch: Partial<ProviderRow>) => db.update(providers).set(patch).where(eq(providers.id, id)).returning().get(),
    delete: (id: string) => db.delete(providers).where(eq(providers.id, id)).returning({ id: providers.id }).all().length === 1,
    /** URL-registered providers whose card was last fetched before `before`. */
    stale: (before: number) =>
      db.select({ id: providers.id }).from(providers).where(and(isNotNull(providers.agent_card_url), lt(providers.refreshed_at, before))).all(),
  };
}
export type ProviderRepository = ReturnType<typeof createProviderRepository>;
