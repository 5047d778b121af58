import { and, asc, eq, sql } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Store } from "../db/store";
import { api_tokens as sqliteTokens, api_tokensPg, users as sqliteUsers, usersPg } from "./table";

export type UserRow = typeof sqliteUsers.$inferSelect;
export type TokenRow = typeof sqliteTokens.$inferSelect;
export type TokenOwner = Pick<TokenRow, "token_digest" | "expires_at"> & Pick<UserRow, "id" | "username" | "role">;

/** Users and their API tokens, on either store. */
export type UserRepository = {
  findById(id: string): Promise<UserRow | undefined>;
  findByUsername(username: string): Promise<UserRow | undefined>;
  list(): Promise<UserRow[]>;
  /** False when the username is taken. */
  insert(row: UserRow): Promise<boolean>;
  updatePassword(id: string, passwordHash: string, at: number): Promise<void>;
  /** Inserts unless the user already has `maxPerUser` tokens (checked and written in one transaction). */
  insertToken(row: TokenRow, maxPerUser: number): Promise<boolean>;
  /** The token's owner and expiry: only the columns authentication needs, on every request. */
  findTokenByDigest(digest: string): Promise<TokenOwner | undefined>;
  listTokens(userId: string): Promise<TokenRow[]>;
  /** False when the user has no such token. */
  deleteToken(userId: string, id: string): Promise<boolean>;
};

/** How long a token's owner may be reused without a query; a revocation in this process applies at once. */
export const TOKEN_CACHE_MS = 1000;

export function createUserRepository(store: Store, clock: () => number = Date.now): UserRepository {
  const { db } = store;
  const users = store.table(sqliteUsers, usersPg);
  const api_tokens = store.table(sqliteTokens, api_tokensPg);
  const tokenOwners = createTtlCache<TokenOwner>(TOKEN_CACHE_MS, 10_000, clock);
  // Prepared once: authentication runs on every request, the MCP proxy's included.
  const byId = store.prepareFirst<UserRow>("user_by_id", db.select().from(users).where(eq(users.id, sql.placeholder("id"))));
  const byDigest = store.prepareFirst<TokenOwner>(
    "token_owner_by_digest",
    db
      .select({
        token_digest: api_tokens.token_digest,
        expires_at: api_tokens.expires_at,
        id: users.id,
        username: users.username,
        role: users.role,
      })
      .from(api_tokens)
      .innerJoin(users, eq(users.id, api_tokens.user_id))
      .where(eq(api_tokens.token_digest, sql.placeholder("digest"))),
  );
  return {
    findById: (id) => byId({ id }),
    findByUsername: async (username) => (await db.select().from(users).where(eq(users.username, username)).limit(1))[0],
    list: async () => db.select().from(users).orderBy(asc(users.created_at), asc(users.id)),
    insert: async (row) =>
      (await db.insert(users).values(row).onConflictDoNothing({ target: users.username }).returning({ id: users.id })).length === 1,
    async updatePassword(id, password_hash, at) {
      await db.update(users).set({ password_hash, updated_at: at }).where(eq(users.id, id));
    },
    insertToken: (row, maxPerUser) =>
      store.transaction(function* (tx, lock) {
        yield lock(`api_tokens:${row.user_id}`);
        const [owned] = yield tx.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(api_tokens).where(eq(api_tokens.user_id, row.user_id));
        if ((owned?.n ?? 0) >= maxPerUser) return false;
        yield tx.insert(api_tokens).values(row);
        return true;
      }),
    findTokenByDigest: (digest) => tokenOwners.readThrough(digest, () => byDigest({ digest })),
    listTokens: async (userId) => db.select().from(api_tokens).where(eq(api_tokens.user_id, userId)).orderBy(asc(api_tokens.created_at)),
    async deleteToken(userId, id) {
      const [deleted] = await db
        .delete(api_tokens)
        .where(and(eq(api_tokens.user_id, userId), eq(api_tokens.id, id)))
        .returning({ digest: api_tokens.token_digest });
      if (deleted) tokenOwners.delete(deleted.digest);
      return deleted !== undefined;
    },
  };
}
