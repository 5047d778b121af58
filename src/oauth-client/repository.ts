import { and, eq, isNotNull, isNull, lt, lte, or } from "drizzle-orm";
import type { Store } from "../db/store";
import {
  oauth_clients as sqliteClients,
  oauth_clientsPg,
  oauth_grants as sqliteGrants,
  oauth_grantsPg,
  oauth_states as sqliteStates,
  oauth_statesPg,
} from "./table";

export type OAuthClientRow = typeof sqliteClients.$inferSelect;
export type OAuthStateRow = typeof sqliteStates.$inferSelect;
export type OAuthGrantRow = typeof sqliteGrants.$inferSelect;
export type GrantPatch = Partial<Omit<OAuthGrantRow, "connector_id">>;

/** Registered clients, pending authorizations and grants, on either store. */
export type OAuthRepository = {
  findClient(issuer: string, redirectUri: string): Promise<OAuthClientRow | undefined>;
  saveClient(row: OAuthClientRow): Promise<void>;
  /** One pending authorization per connector: a new connect replaces the old one. */
  saveState(row: OAuthStateRow): Promise<void>;
  /** Reads a pending authorization without using it up (the callback's confirmation page). */
  findState(digest: string): Promise<OAuthStateRow | undefined>;
  /** Single use: the row is deleted as it is read, so a replayed state finds nothing. */
  takeState(digest: string): Promise<OAuthStateRow | undefined>;
  /** Removes the states expired at `now`; answers how many. */
  deleteExpiredStates(now: number): Promise<number>;
  /** Forgets a connector's pending authorization, if any. */
  deleteStatesOf(connectorId: string): Promise<void>;
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
};

export function createOAuthRepository(store: Store): OAuthRepository {
  const { db } = store;
  const oauth_clients = store.table(sqliteClients, oauth_clientsPg);
  const oauth_states = store.table(sqliteStates, oauth_statesPg);
  const oauth_grants = store.table(sqliteGrants, oauth_grantsPg);
  return {
    findClient: async (issuer, redirectUri) =>
      (
        await db
          .select()
          .from(oauth_clients)
          .where(and(eq(oauth_clients.issuer, issuer), eq(oauth_clients.redirect_uri, redirectUri)))
          .limit(1)
      )[0],
    async saveClient(row) {
      await db
        .insert(oauth_clients)
        .values(row)
        .onConflictDoUpdate({ target: [oauth_clients.issuer, oauth_clients.redirect_uri], set: row });
    },
    async saveState(row) {
      await store.transaction(function* (tx) {
        yield tx.delete(oauth_states).where(eq(oauth_states.connector_id, row.connector_id));
        yield tx.insert(oauth_states).values(row);
      });
    },
    findState: async (digest) => (await db.select().from(oauth_states).where(eq(oauth_states.state_digest, digest)))[0],
    takeState: async (digest) => (await db.delete(oauth_states).where(eq(oauth_states.state_digest, digest)).returning())[0],
    deleteExpiredStates: async (now) =>
      (await db.delete(oauth_states).where(lte(oauth_states.expires_at, now)).returning({ d: oauth_states.state_digest })).length,

    async deleteStatesOf(connectorId) {
      await db.delete(oauth_states).where(eq(oauth_states.connector_id, connectorId));
    },
    findGrant: async (connectorId) =>
      (await db.select().from(oauth_grants).where(eq(oauth_grants.connector_id, connectorId)).limit(1))[0],
    async saveGrant(row) {
      await db.insert(oauth_grants).values(row).onConflictDoUpdate({ target: oauth_grants.connector_id, set: row });
    },
    async updateGrant(connectorId, patch) {
      await db.update(oauth_grants).set(patch).where(eq(oauth_grants.connector_id, connectorId));
    },
    async deleteGrant(connectorId) {
      await db.delete(oauth_grants).where(eq(oauth_grants.connector_id, connectorId));
    },
    dueGrants: async (now, limit) =>
      (
        await db
          .select({ connector_id: oauth_grants.connector_id })
          .from(oauth_grants)
          .where(
            and(
              isNotNull(oauth_grants.refresh_at),
              lte(oauth_grants.refresh_at, now),
              or(isNull(oauth_grants.lease_until), lt(oauth_grants.lease_until, now)),
            ),
          )
          .limit(limit)
      ).map((r) => r.connector_id),
    /**
     * One UPDATE that only succeeds while no other process holds the lease, so two processes sharing the database
     * never refresh the same token (the store serialises the writes to one row).
     */
    lease: async (connectorId, owner, now, until) =>
      (
        await db
          .update(oauth_grants)
          .set({ lease_owner: owner, lease_until: until })
          .where(
            and(
              eq(oauth_grants.connector_id, connectorId),
              or(isNull(oauth_grants.lease_until), lt(oauth_grants.lease_until, now), eq(oauth_grants.lease_owner, owner)),
            ),
          )
          .returning({ id: oauth_grants.connector_id })
      ).length === 1,
    async release(connectorId, owner) {
      await db
        .update(oauth_grants)
        .set({ lease_owner: null, lease_until: null })
        .where(and(eq(oauth_grants.connector_id, connectorId), eq(oauth_grants.lease_owner, owner)));
    },
  };
}
