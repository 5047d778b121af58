import { and, eq, isNotNull, lt, lte, or, isNull } from "drizzle-orm";
import type { Db } from "../db/open";
import { oauth_clients, oauth_grants, oauth_states } from "../db/schema";

export type OAuthClientRow = typeof oauth_clients.$inferSelect;
export type OAuthStateRow = typeof oauth_states.$inferSelect;
export type OAuthGrantRow = typeof oauth_grants.$inferSelect;

export function createOAuthRepository(db: Db) {
  return {
    findClient: (issuer: string, redirectUri: string) =>
      db.select().from(oauth_clients).where(and(eq(oauth_clients.issuer, issuer), eq(oauth_clients.redirect_uri, redirectUri))).get(),
    saveClient: (row: OAuthClientRow) =>
      db
        .insert(oauth_clients)
        .values(row)
        .onConflictDoUpdate({ target: [oauth_clients.issuer, oauth_clients.redirect_uri], set: row })
        .run(),

    /** One pending authorization per connector: a new connect replaces the old one. */
    saveState(row: OAuthStateRow): void {
      db.transaction((tx) => {
        tx.delete(oauth_states).where(eq(oauth_states.connector_id, row.connector_id)).run();
        tx.insert(oauth_states).values(row).run();
      });
    },
    /** Single use: the row is deleted as it is read, so a replayed state finds nothing. */
    takeState: (digest: string) => db.delete(oauth_states).where(eq(oauth_states.state_digest, digest)).returning().get(),
    deleteExpiredStates: (now: number) =>
      db.delete(oauth_states).where(lte(oauth_states.expires_at, now)).returning({ d: oauth_states.state_digest }).all().length,

    findGrant: (connectorId: string) => db.select().from(oauth_grants).where(eq(oauth_grants.connector_id, connectorId)).get(),
    saveGrant: (row: OAuthGrantRow) =>
      db.insert(oauth_grants).values(row).onConflictDoUpdate({ target: oauth_grants.connector_id, set: row }).run(),
    updateGrant: (connectorId: string, patch: Partial<OAuthGrantRow>) =>
      db.update(oauth_grants).set(patch).where(eq(oauth_grants.connector_id, connectorId)).returning().get(),
    deleteGrant: (connectorId: string) => db.delete(oauth_grants).where(eq(oauth_grants.connector_id, connectorId)).run(),

    /** Grants due for a refresh whose lease is free (or expired). */
    dueGrants: (now: number, limit: number) =>
      db
        .select({ connector_id: oauth_grants.connector_id })
        .from(oauth_grants)
        .where(and(isNotNull(oauth_grants.refresh_at), lte(oauth_grants.refresh_at, now), or(isNull(oauth_grants.lease_until), lt(oauth_grants.lease_until, now))))
        .limit(limit)
        .all(),
    /**
     * Takes the lease on a grant: one UPDATE that only succeeds while no other process holds it, so two
     * processes sharing the database never refresh the same token (SQLite serialises the writes).
     */
    lease(connectorId: string, owner: string, now: number, untilMs: number): boolean {
      return (
        db
          .update(oauth_grants)
          .set({ lease_owner: owner, lease_until: untilMs })
          .where(and(eq(oauth_grants.connector_id, connectorId), or(isNull(oauth_grants.lease_until), lt(oauth_grants.lease_until, now), eq(oauth_grants.lease_owner, owner))))
          .returning({ id: oauth_grants.connector_id })
          .get() !== undefined
      );
    },
    release: (connectorId: string, owner: string) =>
      db
        .update(oauth_grants)
        .set({ lease_owner: null, lease_until: null })
        .where(and(eq(oauth_grants.connector_id, connectorId), eq(oauth_grants.lease_owner, owner)))
        .run(),
  };
}
export type OAuthRepository = ReturnType<typeof createOAuthRepository>;
