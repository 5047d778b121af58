import { and, asc, eq, sql } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Db } from "../db/open";
import { api_tokens, users } from "./table";

export type UserRow = typeof users.$inferSelect;
export type TokenRow = typeof api_tokens.$inferSelect;
export type TokenOwner = Pick<TokenRow, "token_digest" | "expires_at"> & Pick<UserRow, "id" | "username" | "role">;

/** Users and their API tokens. Asynchronous, so that another store can implement it without touching callers. */
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

export function createUserRepository(db: Db, clock: () => number = Date.now): UserRepository {
  const tokenOwners = createTtlCache<TokenOwner>(TOKEN_CACHE_MS, 10_000, clock);
  // Prepared once: authentication runs on every request, the MCP proxy's included.
  const byId = db.select().from(users).where(eq(users.id, sql.placeholder("id"))).prepare();
  const byDigest = db
    .select({
      token_digest: api_tokens.token_digest,
      expires_at: api_tokens.expires_at,
      id: users.id,
      username: users.username,
      role: users.role,
    })
    .from(api_tokens)
    .innerJoin(users, eq(users.id, api_tokens.user_id))
    .where(eq(api_tokens.token_digest, sql.placeholder("digest")))
    .prepare();
  return {
    findById: async (id) => byId.get({ id }),
    findByUsername: async (username) => db.select().from(users).where(eq(users.username, username)).get(),
    list: async () => db.select().from(users).orderBy(asc(users.created_at), asc(users.id)).all(),
    insert: async (row) =>
      db.insert(users).values(row).onConflictDoNothing({ target: users.username }).returning({ id: users.id }).get() !== undefined,
    async updatePassword(id, password_hash, at) {
      db.update(users).set({ password_hash, updated_at: at }).where(eq(users.id, id)).run();
    },
    async insertToken(row, maxPerUser) {
      return db.transaction((tx) => {
        const [owned] = tx.select({ n: sql<number>`count(*)` }).from(api_tokens).where(eq(api_tokens.user_id, row.user_id)).all();
        if ((owned?.n ?? 0) >= maxPerUser) return false;
        tx.insert(api_tokens).values(row).run();
        return true;
      });
    },
    findTokenByDigest: async (digest) => tokenOwners.readThrough(digest, () => byDigest.get({ digest })),
    listTokens: async (userId) =>
      db.select().from(api_tokens).where(eq(api_tokens.user_id, userId)).orderBy(asc(api_tokens.created_at)).all(),
    async deleteToken(userId, id) {
      const deleted = db
        .delete(api_tokens)
        .where(and(eq(api_tokens.user_id, userId), eq(api_tokens.id, id)))
        .returning({ digest: api_tokens.token_digest })
        .get();
      if (deleted) tokenOwners.delete(deleted.digest);
      return deleted !== undefined;
    },
  };
}
