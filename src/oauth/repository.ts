import { and, eq, isNotNull, isNull, lt, lte, or } from "drizzle-orm";
import type { Db } from "../db/open";
import type { Reseal } from "../secrets/sealer";
import { clientSeal, grantSeal, stateSeal } from "./sealing";
import { oauth_clients, oauth_grants, oauth_states } from "./table";

export type OAuthClientRow = typeof oauth_clients.$inferSelect;
export type OAuthStateRow = typeof oauth_states.$inferSelect;
export type OAuthGrantRow = typeof oauth_grants.$inferSelect;
export type GrantPatch = Partial<Omit<OAuthGrantRow, "connector_id">>;

/**
 * Registered clients, pending authorizations and grants. Asynchronous, so that another store can implement it
 * without touching callers.
 */
export type OAuthRepository = {
  findClient(issuer: string, redirectUri: string): Promise<OAuthClientRow | undefined>;
  saveClient(row: OAuthClientRow): Promise<void>;
  /** One pending authorization per connector: a new connect replaces the old one. */
  saveState(row: OAuthStateRow): Promise<void>;
  /** Single use: the row is deleted as it is read, so a replayed state finds nothing. */
  takeState(digest: string): Promise<OAuthStateRow | undefined>;
  /** Removes the states expired at `now`; answers how many. */
  deleteExpiredStates(now: number): Promise<number>;
  findGrant(connectorId: string): Promise<OAuthGrantRow | undefined>;
  saveGrant(row: OAuthGrantRow): Promise<void>;
  updateGrant(connectorId: string, patch: GrantPatch): Promise<void>;
  deleteGrant(connectorId: string): Promise<void>;
  /** Grants due for a refresh whose lease is free (or expired). */
  dueGrants(now: number, limit: number): Promise<string[]>;
  /** Takes the refresh lease on a grant until `until`, unless another owner holds an unexpired one. */
  lease(connectorId: string, owner: string, now: number, until: number): Promise<boolean>;
  /** Gives the lease back, if `owner` still holds it. */
  release(connectorId: string, owner: string): Promise<void>;
  /** Key rotation: every sealed value of these tables, re-sealed by `reseal`; answers how many. */
  resealAll(reseal: Reseal): Promise<number>;
};

export function createOAuthRepository(db: Db): OAuthRepository {
  return {
    findClient: async (issuer, redirectUri) =>
      db.select().from(oauth_clients).where(and(eq(oauth_clients.issuer, issuer), eq(oauth_clients.redirect_uri, redirectUri))).get(),
    async saveClient(row) {
      db.insert(oauth_clients).values(row).onConflictDoUpdate({ target: [oauth_clients.issuer, oauth_clients.redirect_uri], set: row }).run();
    },
    async saveState(row) {
      db.transaction((tx) => {
        tx.delete(oauth_states).where(eq(oauth_states.connector_id, row.connector_id)).run();
        tx.insert(oauth_states).values(row).run();
      });
    },
    takeState: async (digest) => db.delete(oauth_states).where(eq(oauth_states.state_digest, digest)).returning().get(),
    deleteExpiredStates: async (now) =>
      db.delete(oauth_states).where(lte(oauth_states.expires_at, now)).returning({ d: oauth_states.state_digest }).all().length,

    findGrant: async (connectorId) => db.select().from(oauth_grants).where(eq(oauth_grants.connector_id, connectorId)).get(),
    async saveGrant(row) {
      db.insert(oauth_grants).values(row).onConflictDoUpdate({ target: oauth_grants.connector_id, set: row }).run();
    },
    async updateGrant(connectorId, patch) {
      db.update(oauth_grants).set(patch).where(eq(oauth_grants.connector_id, connectorId)).run();
    },
    async deleteGrant(connectorId) {
      db.delete(oauth_grants).where(eq(oauth_grants.connector_id, connectorId)).run();
    },
    dueGrants: async (now, limit) =>
      db
        .select({ connector_id: oauth_grants.connector_id })
        .from(oauth_grants)
        .where(and(isNotNull(oauth_grants.refresh_at), lte(oauth_grants.refresh_at, now), or(isNull(oauth_grants.lease_until), lt(oauth_grants.lease_until, now))))
        .limit(limit)
        .all()
        .map((r) => r.connector_id),
    /**
     * One UPDATE that only succeeds while no other process holds the lease, so two processes sharing the database
     * never refresh the same token (SQLite serialises the writes).
     */
    lease: async (connectorId, owner, now, until) =>
      db
        .update(oauth_grants)
        .set({ lease_owner: owner, lease_until: until })
        .where(and(eq(oauth_grants.connector_id, connectorId), or(isNull(oauth_grants.lease_until), lt(oauth_grants.lease_until, now), eq(oauth_grants.lease_owner, owner))))
        .returning({ id: oauth_grants.connector_id })
        .get() !== undefined,
    async release(connectorId, owner) {
      db.update(oauth_grants)
        .set({ lease_owner: null, lease_until: null })
        .where(and(eq(oauth_grants.connector_id, connectorId), eq(oauth_grants.lease_owner, owner)))
        .run();
    },
    async resealAll(reseal) {
      let count = 0;
      for (const row of db.select().from(oauth_clients).where(isNotNull(oauth_clients.client_secret)).all()) {
        const client_secret = reseal(row.client_secret!, clientSeal(row.issuer, row.redirect_uri));
        db.update(oauth_clients).set({ client_secret }).where(and(eq(oauth_clients.issuer, row.issuer), eq(oauth_clients.redirect_uri, row.redirect_uri))).run();
        count++;
      }
      for (const row of db.select({ digest: oauth_states.state_digest, secrets: oauth_states.secrets }).from(oauth_states).all()) {
        db.update(oauth_states).set({ secrets: reseal(row.secrets, stateSeal(row.digest)) }).where(eq(oauth_states.state_digest, row.digest)).run();
        count++;
      }
      for (const row of db.select({ id: oauth_grants.connector_id, secrets: oauth_grants.secrets }).from(oauth_grants).all()) {
        db.update(oauth_grants).set({ secrets: reseal(row.secrets, grantSeal(row.id)) }).where(eq(oauth_grants.connector_id, row.id)).run();
        count++;
      }
      return count;
    },
  };
}
