import { and, asc, eq, isNotNull, lt } from "drizzle-orm";
import type { Store } from "../db/store";
import { providers as sqliteProviders, providersPg } from "./table";

export type ProviderRow = typeof sqliteProviders.$inferSelect;
export type ProviderPatch = Partial<Omit<ProviderRow, "id" | "created_at">>;

/** Agent providers, on either store. */
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

export function createProviderRepository(store: Store): ProviderRepository {
  const { db } = store;
  const providers = store.table(sqliteProviders, providersPg);
  return {
    async insert(row) {
      await db.insert(providers).values(row);
    },
    find: async (id) => (await db.select().from(providers).where(eq(providers.id, id)).limit(1))[0],
    list: async () => db.select().from(providers).orderBy(asc(providers.created_at), asc(providers.id)),
    update: async (id, patch) => (await db.update(providers).set(patch).where(eq(providers.id, id)).returning())[0],
    delete: async (id) => (await db.delete(providers).where(eq(providers.id, id)).returning({ id: providers.id })).length === 1,
    stale: async (before) =>
      (
        await db
          .select({ id: providers.id })
          .from(providers)
          .where(and(isNotNull(providers.agent_card_url), lt(providers.refreshed_at, before)))
      ).map((r) => r.id),
  };
}
