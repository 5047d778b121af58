import { and, asc, eq, sql } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Db } from "../db/open";
import { api_tokens, users } from "../db/schema";

export type UserRow = typeof users.$inferSelect;
export type TokenRow = typeof api_tokens.$inferSelect;
export type TokenOwner = Pick<TokenRow, "token_digest" | "expires_at"> & Pick<UserRow, "id" | "username" | "role">;

/** How long a token's owner may be reused without a query; a revocation in this process applies at once. */
export const TOKEN_CACHE_MS = 1000;

export function createUserRepository(db: Db, clock: () => number = Date.now) {
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
    findById: (id: string): UserRow | undefined => byId.get({ id }),
    findByUsername: (username: string) => db.select().from(users).where(eq(users.username, username)).get(),
    list: () => db.select().from(users).orderBy(asc(users.created_at), asc(users.id)).all(),
    /** Returns false when the username is taken. */
    insert(row: UserRow): boolean {
      return db.insert(users).values(row).onConflictDoNothing({ target: users.username }).returning({ id: users.id }).get() !== undefined;
    },
    updatePassword: (id: string, password_hash: string, at: number) =>
      db.update(users).set({ password_hash, updated_at: at }).where(eq(users.id, id)).run(),
    insertToken: (row: TokenRow) => db.insert(api_tokens).values(row).run(),
    /** The token's owner and expiry: only the columns authentication needs, on every request. */
    findTokenByDigest: (digest: string): TokenOwner | undefined => tokenOwners.readThrough(digest, () => byDigest.get({ digest })),
    listTokens: (userId: string) =>
      db.select().from(api_tokens).where(eq(api_tokens.user_id, userId)).orderBy(asc(api_tokens.created_at)).all(),
    deleteToken(userId: string, id: string): boolean {
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
export type UserRepository = ReturnType<typeof createUserRepository>;
