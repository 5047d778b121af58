import { and, eq, gte, lt, sql } from "drizzle-orm";
import type { Store } from "../db/store";
import { legacy_sessions as sqliteSessions, legacy_sessionsPg } from "./table";

/** What a replica needs to take up a 2025 session another opened: the client's initialize as the session agreed it. */
export type LegacyInit = {
  clientInfo: { name: string; version: string };
  capabilities: Record<string, unknown>;
  protocolVersion: string;
  /** Whether the tool policy applies (false only for the owner's unfiltered listing). */
  policy: boolean;
};

export type StoredLegacySession = {
  id: string;
  connectorId: string;
  userId: string;
  owner: string;
  init: LegacyInit;
  logLevel: string | undefined;
  usedAt: number;
};

/**
 * The sessions of 2025 clients of 2026-07-28-only servers in the store (legacy-sessions.ts), on either dialect: any
 * replica takes up a session another opened (no sticky sessions).
 */
export function createLegacySessionStore(store: Store) {
  const { db } = store;
  const sessions = store.table(sqliteSessions, legacy_sessionsPg);
  return {
    async insert(session: Omit<StoredLegacySession, "usedAt" | "logLevel">, at: number): Promise<void> {
      await db.insert(sessions).values({
        id: session.id,
        connector_id: session.connectorId,
        user_id: session.userId,
        owner: session.owner,
        init: JSON.stringify(session.init),
        log_level: null,
        created_at: at,
        used_at: at,
      });
    },
    async find(id: string): Promise<StoredLegacySession | undefined> {
      const [row] = await db.select().from(sessions).where(eq(sessions.id, id)).limit(1);
      return (
        row && {
          id: row.id,
          connectorId: row.connector_id,
          userId: row.user_id,
          owner: row.owner,
          init: JSON.parse(row.init) as LegacyInit,
          logLevel: row.log_level ?? undefined,
          usedAt: row.used_at,
        }
      );
    },
    /** Sessions the user holds on every replica, idle ones left out (they are as good as ended). */
    async countOf(userId: string, usedSince: number): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)`.mapWith(Number) })
        .from(sessions)
        .where(and(eq(sessions.user_id, userId), gte(sessions.used_at, usedSince)));
      return row?.n ?? 0;
    },
    async touch(id: string, at: number): Promise<void> {
      await db.update(sessions).set({ used_at: at }).where(eq(sessions.id, id));
    },
    async setLogLevel(id: string, level: string): Promise<void> {
      await db.update(sessions).set({ log_level: level }).where(eq(sessions.id, id));
    },
    async delete(id: string): Promise<void> {
      await db.delete(sessions).where(eq(sessions.id, id));
    },
    /** Sessions unused since `before` are forgotten; how many. */
    async deleteIdle(before: number): Promise<number> {
      return (await db.delete(sessions).where(lt(sessions.used_at, before)).returning({ id: sessions.id })).length;
    },
  };
}
export type LegacySessionStore = ReturnType<typeof createLegacySessionStore>;
