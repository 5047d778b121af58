import { and, eq, gte, inArray, lt, sql } from "drizzle-orm";
import type { ClientCapabilities, ServerCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { Store } from "../db/store";
import type { Sealer } from "../secrets/sealer";
import {
  virtual_session_members as sqliteSessionMembers,
  virtual_session_membersPg,
  virtual_sessions as sqliteSessions,
  virtual_sessionsPg,
} from "./table";

/** A client session as the store keeps it (table.ts `virtual_sessions`). */
export type StoredSession = {
  id: string;
  serverId: string;
  userId: string;
  protocolVersion: string;
  capabilities: ClientCapabilities;
  usedAt: number;
};

/** What another replica needs to go on in a member's upstream session without a second initialize. */
export type StoredUpstream = {
  /** The member's Mcp-Session-Id (none for a member without sessions). */
  sessionId?: string;
  protocolVersion?: string;
  capabilities?: ServerCapabilities;
};

/** Binds a sealed upstream session id to its client session and member (a copy elsewhere does not open). */
export const upstreamSealContext = (sessionId: string, connectorId: string) =>
  `virtual_session_members/${sessionId}/${connectorId}`;

/**
 * The client sessions of virtual servers in the store, on either dialect: any replica finds a session another one
 * opened, and goes on in its members' upstream sessions (issue 24 item 5, no sticky sessions).
 */
export function createSessionStore(store: Store, sealer: Sealer) {
  const { db } = store;
  const sessions = store.table(sqliteSessions, virtual_sessionsPg);
  const members = store.table(sqliteSessionMembers, virtual_session_membersPg);
  const json = (text: string | null) => (text === null ? undefined : (JSON.parse(text) as never));

  return {
    async insert(session: StoredSession, at: number): Promise<void> {
      await db.insert(sessions).values({
        id: session.id,
        virtual_server_id: session.serverId,
        user_id: session.userId,
        protocol_version: session.protocolVersion,
        capabilities: JSON.stringify(session.capabilities),
        created_at: at,
        used_at: at,
      });
    },
    /** Sessions the user holds, idle ones left out (they are as good as ended). */
    async countOf(userId: string, usedSince: number): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)`.mapWith(Number) })
        .from(sessions)
        .where(and(eq(sessions.user_id, userId), gte(sessions.used_at, usedSince)));
      return row?.n ?? 0;
    },
    async find(id: string): Promise<StoredSession | undefined> {
      const [row] = await db.select().from(sessions).where(eq(sessions.id, id)).limit(1);
      return (
        row && {
          id: row.id,
          serverId: row.virtual_server_id,
          userId: row.user_id,
          protocolVersion: row.protocol_version,
          capabilities: JSON.parse(row.capabilities) as ClientCapabilities,
          usedAt: row.used_at,
        }
      );
    },
    /** Which of these sessions are still stored (ended elsewhere, or with their virtual server or user: not). */
    async existing(ids: readonly string[]): Promise<Set<string>> {
      const found = new Set<string>();
      // In chunks: a statement's bound parameters are limited on either dialect.
      for (let at = 0; at < ids.length; at += 500) {
        const rows = await db
          .select({ id: sessions.id })
          .from(sessions)
          .where(inArray(sessions.id, ids.slice(at, at + 500)));
        for (const row of rows) found.add(row.id);
      }
      return found;
    },
    async touch(id: string, at: number): Promise<void> {
      await db.update(sessions).set({ used_at: at }).where(eq(sessions.id, id));
    },
    /** Forgets the session and its members' upstream sessions (the cascade). */
    async delete(id: string): Promise<void> {
      await db.delete(sessions).where(eq(sessions.id, id));
    },
    /** Sessions unused since `before` are forgotten; how many. */
    async deleteIdle(before: number): Promise<number> {
      return (await db.delete(sessions).where(lt(sessions.used_at, before)).returning({ id: sessions.id })).length;
    },
    /** The upstream session this client session holds with this member, as a replica stored it. */
    async upstream(id: string, connectorId: string): Promise<StoredUpstream | undefined> {
      const [row] = await db
        .select()
        .from(members)
        .where(and(eq(members.session_id, id), eq(members.connector_id, connectorId)))
        .limit(1);
      return (
        row && {
          ...(row.upstream_session !== null && {
            sessionId: sealer.open(row.upstream_session, upstreamSealContext(id, connectorId)),
          }),
          ...(row.protocol_version !== null && { protocolVersion: row.protocol_version }),
          ...(row.capabilities !== null && { capabilities: json(row.capabilities) }),
        }
      );
    },
    /** The member's upstream session as it is now (opened, or opened again after the member forgot it). */
    async setUpstream(id: string, connectorId: string, upstream: StoredUpstream): Promise<void> {
      const values = {
        upstream_session:
          upstream.sessionId === undefined ? null : sealer.seal(upstream.sessionId, upstreamSealContext(id, connectorId)),
        protocol_version: upstream.protocolVersion ?? null,
        capabilities: upstream.capabilities === undefined ? null : JSON.stringify(upstream.capabilities),
      };
      await db
        .insert(members)
        .values({ session_id: id, connector_id: connectorId, ...values })
        .onConflictDoUpdate({ target: [members.session_id, members.connector_id], set: values });
    },
    async deleteUpstream(id: string, connectorId: string): Promise<void> {
      await db.delete(members).where(and(eq(members.session_id, id), eq(members.connector_id, connectorId)));
    },
  };
}
export type SessionStore = ReturnType<typeof createSessionStore>;
