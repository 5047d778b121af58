import { and, asc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/open";
import { api_tokens, users } from "../db/schema";

export type UserRow = typeof users.$inferSelect;
export type TokenRow = typeof api_tokens.$inferSelect;

export function createUserRepository(db: Db) {
  // Prepared once: authentication runs on every request, the MCP proxy's included.
  const byId = db.select().from(users).where(eq(users.id, sql.placeholder("id"))).prepare();
  const byDigest = db
    .select({ token: api_tokens, user: users })
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
    findTokenByDigest: (digest: string): { token: TokenRow; user: UserRow } | undefined => byDigest.get({ digest }),
    listTokens: (userId: string) =>
      db.select().from(api_tokens).where(eq(api_tokens.user_id, userId)).orderBy(asc(api_tokens.created_at)).all(),
    deleteToken: (userId: string, id: string) =>
      db
        .delete(api_tokens)
        .where(and(eq(api_tokens.user_id, userId), eq(api_tokens.id, id)))
        .returning({ id: api_tokens.id })
        .all().length === 1,
  };
}
export type UserRepository = ReturnType<typeof createUserRepository>;
