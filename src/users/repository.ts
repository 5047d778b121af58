import { and, asc, eq, lte, ne, sql } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import { hasRoom } from "../db/caps";
import type { Store } from "../db/store";
import {
  api_tokens as sqliteTokens,
  api_tokensPg,
  sessions as sqliteSessions,
  sessionsPg,
  users as sqliteUsers,
  usersPg,
} from "./table";

export type UserRow = typeof sqliteUsers.$inferSelect;
export type TokenRow = typeof sqliteTokens.$inferSelect;
export type SessionRow = typeof sqliteSessions.$inferSelect;
export type TokenOwner = Pick<TokenRow, "token_digest" | "expires_at"> &
  Pick<UserRow, "id" | "username" | "role" | "disabled_at"> & { token_id: string };
/** A console session and the user it signs in. */
export type SessionOwner = Pick<SessionRow, "digest" | "expires_at"> & Pick<UserRow, "id" | "username" | "role" | "disabled_at">;

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
  /** Revokes every token of the user; how many there were. */
  deleteTokensOf(userId: string): Promise<number>;
  /** Disables (a time) or enables (null) a user; false when there is no such user. */
  setDisabled(id: string, disabledAt: number | null, at: number): Promise<boolean>;
  setRole(id: string, role: UserRow["role"], at: number): Promise<boolean>;
  /** An administrator's override of the default rate limit (null: the default again). */
  setRequestsPerMinute(id: string, requestsPerMinute: number | null, at: number): Promise<boolean>;
  /** Deletes the user; their tokens, sessions and grants go with them (foreign keys cascade). */
  delete(id: string): Promise<boolean>;
  insertSession(row: SessionRow): Promise<void>;
  findSession(digest: string): Promise<SessionOwner | undefined>;
  deleteSession(digest: string): Promise<void>;
  /** Ends every session of the user but `keep` (the one making the change, if any); how many ended. */
  deleteSessionsOf(userId: string, keep?: string): Promise<number>;
  deleteExpiredSessions(now: number): Promise<number>;
};

/** How long a token's owner may be reused without a query; a revocation in this process applies at once. */
export const TOKEN_CACHE_MS = 1000;

export function createUserRepository(store: Store, clock: () => number = Date.now): UserRepository {
  const { db } = store;
  const users = store.table(sqliteUsers, usersPg);
  const api_tokens = store.table(sqliteTokens, api_tokensPg);
  const sessions = store.table(sqliteSessions, sessionsPg);
  const tokenOwners = createTtlCache<TokenOwner>(TOKEN_CACHE_MS, 10_000, clock);
  // Prepared once: authentication runs on every request, the MCP proxy's included.
  const byId = store.prepareFirst<UserRow>(
    "user_by_id",
    db
      .select()
      .from(users)
      .where(eq(users.id, sql.placeholder("id"))),
  );
  const byDigest = store.prepareFirst<TokenOwner>(
    "token_owner_by_digest",
    db
      .select({
        token_id: api_tokens.id,
        token_digest: api_tokens.token_digest,
        expires_at: api_tokens.expires_at,
        id: users.id,
        username: users.username,
        role: users.role,
        disabled_at: users.disabled_at,
      })
      .from(api_tokens)
      .innerJoin(users, eq(users.id, api_tokens.user_id))
      .where(eq(api_tokens.token_digest, sql.placeholder("digest"))),
  );
  /** One user's columns; false when there is no such user. */
  const setColumns = async (id: string, columns: Partial<UserRow>) =>
    (await db.update(users).set(columns).where(eq(users.id, id)).returning({ id: users.id })).length === 1;
  return {
    findById: (id) => byId({ id }),
    findByUsername: async (username) => (await db.select().from(users).where(eq(users.username, username)).limit(1))[0],
    list: async () => db.select().from(users).orderBy(asc(users.created_at), asc(users.id)),
    insert: async (row) =>
      (await db.insert(users).values(row).onConflictDoNothing({ target: users.username }).returning({ id: users.id })).length ===
      1,
    async updatePassword(id, password_hash, at) {
      await db.update(users).set({ password_hash, updated_at: at }).where(eq(users.id, id));
    },
    async setDisabled(id, disabled_at, at) {
      const changed = await setColumns(id, { disabled_at, updated_at: at });
      // A token's owner is remembered for a second: forget them all, so a disabled user is refused at once here.
      tokenOwners.clear();
      return changed;
    },
    async setRole(id, role, at) {
      const changed = await setColumns(id, { role, updated_at: at });
      tokenOwners.clear();
      return changed;
    },
    setRequestsPerMinute: (id, requests_per_minute, at) => setColumns(id, { requests_per_minute, updated_at: at }),
    async delete(id) {
      const deleted = await db.delete(users).where(eq(users.id, id)).returning({ id: users.id });
      tokenOwners.clear();
      return deleted.length === 1;
    },
    async insertSession(row) {
      await db.insert(sessions).values(row);
    },
    findSession: async (digest) =>
      (
        await db
          .select({
            digest: sessions.digest,
            expires_at: sessions.expires_at,
            id: users.id,
            username: users.username,
            role: users.role,
            disabled_at: users.disabled_at,
          })
          .from(sessions)
          .innerJoin(users, eq(users.id, sessions.user_id))
          .where(eq(sessions.digest, digest))
          .limit(1)
      )[0],
    async deleteSession(digest) {
      await db.delete(sessions).where(eq(sessions.digest, digest));
    },
    deleteSessionsOf: async (userId, keep) =>
      (
        await db
          .delete(sessions)
          .where(keep === undefined ? eq(sessions.user_id, userId) : and(eq(sessions.user_id, userId), ne(sessions.digest, keep)))
          .returning({ d: sessions.digest })
      ).length,
    deleteExpiredSessions: async (now) =>
      (await db.delete(sessions).where(lte(sessions.expires_at, now)).returning({ d: sessions.digest })).length,
    insertToken: (row, maxPerUser) =>
      store.transaction(function* (tx, lock) {
        if (!(yield* hasRoom(tx, lock, api_tokens, api_tokens.user_id, row.user_id, maxPerUser))) return false;
        yield tx.insert(api_tokens).values(row);
        return true;
      }),
    findTokenByDigest: (digest) => tokenOwners.readThrough(digest, () => byDigest({ digest })),
    listTokens: async (userId) =>
      db.select().from(api_tokens).where(eq(api_tokens.user_id, userId)).orderBy(asc(api_tokens.created_at)),
    async deleteToken(userId, id) {
      const [deleted] = await db
        .delete(api_tokens)
        .where(and(eq(api_tokens.user_id, userId), eq(api_tokens.id, id)))
        .returning({ digest: api_tokens.token_digest });
      if (deleted) tokenOwners.delete(deleted.digest);
      return deleted !== undefined;
    },
    async deleteTokensOf(userId) {
      const deleted = await db
        .delete(api_tokens)
        .where(eq(api_tokens.user_id, userId))
        .returning({ digest: api_tokens.token_digest });
      for (const { digest } of deleted) tokenOwners.delete(digest);
      return deleted.length;
    },
  };
}
