import { and, asc, eq, isNotNull, lt } from "drizzle-orm";
import type { Db } from "../db/open";
import { providers } from "./table";

export type ProviderRow = typeof providers.$inferSelect;
export type ProviderPatch = Partial<Omit<ProviderRow, "id" | "created_at">>;

/** Agent providers. Asynchronous, so that another store can implement it without touching callers. */
export type ProviderRepository = {
  insert(row: ProviderRow): Promise<void>;
  find(id: string): Promise<ProviderRow | undefined>;
  list(): Promise<ProviderRow[]>;
  update(id: string, patch: ProviderPatch): Promise<ProviderRow | undefined>;
  /** False when there was no such provider. */
  delete(id: string): Promise<boolean>;
  /** URL-registered providers whose card was last fetched before `before`. */
  stale(before: number): Promise<string[]>;
};

export function createProviderRepository(db: Db): ProviderRepository {
  return {
    async insert(row) {
      db.insert(providers).values(row).run();
    },
    find: async (id) => db.select().from(providers).where(eq(providers.id, id)).get(),
    list: async () => db.select().from(providers).orderBy(asc(providers.created_at), asc(providers.id)).all(),
    update: async (id, patch) => db.update(providers).set(patch).where(eq(providers.id, id)).returning().get(),
    delete: async (id) => db.delete(providers).where(eq(providers.id, id)).returning({ id: providers.id }).all().length === 1,
    stale: async (before) =>
      db
        .select({ id: providers.id })
        .from(providers)
        .where(and(isNotNull(providers.agent_card_url), lt(providers.refreshed_at, before)))
        .all()
        .map((r) => r.id),
  };
}
