import { and, asc, desc, eq, gt, isNull, lt, lte, notExists, notInArray, sql, type SQL } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { Store } from "../db/store";
import { users as sqliteUsers, usersPg } from "../users/table";
import {
  as_clients as sqliteClients,
  as_clientsPg,
  as_grants as sqliteGrants,
  as_grantsPg,
  as_requests as sqliteRequests,
  as_requestsPg,
  as_tokens as sqliteTokens,
  as_tokensPg,
} from "./table";

export type ClientRow = typeof sqliteClients.$inferSelect;
export type RequestRow = typeof sqliteRequests.$inferSelect;
export type GrantRow = typeof sqliteGrants.$inferSelect;
export type TokenRow = typeof sqliteTokens.$inferSelect;
/** What the proxy needs of an access token: whose it is, for which connector or virtual server, until when. */
export type AccessTokenOwner = Pick<TokenRow, "digest" | "kind" | "expires_at"> &
  Pick<GrantRow, "connector_id" | "virtual_server_id" | "client_id"> & {
    grant_id: string;
    user_id: string;
    username: string;
    role: "admin" | "user";
    disabled_at: number | null;
  };

/** The authorization server's records, on either store. */
export type AuthServerRepository = {
  findClient(clientId: string): Promise<ClientRow | undefined>;
  /**
   * Registers unless, among the registered clients never used and not expired at `row.created_at`, `limits.max` are
   * kept already, or `limits.perAddress` from `row.registered_from` (one transaction). Refused: which bound, and when
   * the oldest of those expires (room again).
   */
  registerClient(row: ClientRow, limits: { max: number; perAddress: number }): Promise<RegistrationRefused | undefined>;
  /** A client known by its metadata document: stored or refreshed. */
  saveMetadataClient(row: ClientRow): Promise<void>;
  touchClient(clientId: string, at: number): Promise<void>;
  /** Keeps a signed-in person's request; beyond `perUser` of theirs, their oldest go (one transaction). */
  saveRequest(row: RequestRow & { user_id: string }, perUser: number): Promise<void>;
  findRequest(handleDigest: string): Promise<RequestRow | undefined>;
  /** Single use: deleted as it is read. */
  takeRequest(handleDigest: string): Promise<RequestRow | undefined>;
  insertGrant(row: GrantRow): Promise<void>;
  findGrant(id: string): Promise<GrantRow | undefined>;
  grantsOf(userId: string): Promise<GrantRow[]>;
  /** False when the user has no such grant. Its tokens go with it (cascade). */
  deleteGrant(userId: string, id: string): Promise<boolean>;
  touchGrant(id: string, at: number): Promise<void>;
  insertToken(row: TokenRow): Promise<void>;
  findToken(digest: string): Promise<TokenRow | undefined>;
  /** Marks a code or refresh token used, once: false when it was used already (presented a second time). */
  useToken(digest: string, kind: "code" | "refresh", at: number): Promise<boolean>;
  deleteToken(digest: string): Promise<void>;
  /** For the proxy, on every request: cached as API tokens are (a revocation in this process applies at once). */
  accessTokenOwner(digest: string): Promise<AccessTokenOwner | undefined>;
  /** Expired requests, codes and tokens; grants with no token left since `emptyBefore`; registered clients never used. */
  deleteExpired(now: number, emptyBefore: number): Promise<number>;
};

/** Which bound a registration is over, and when the oldest registration under it expires. */
export type RegistrationRefused = { bound: "address" | "service"; until: number };

/** How long an access token's owner may be reused without a query (the same bound as API tokens). */
export const ACCESS_TOKEN_CACHE_MS = 1000;

export function createAuthServerRepository(store: Store, clock: () => number = Date.now): AuthServerRepository {
  const { db } = store;
  const clients = store.table(sqliteClients, as_clientsPg);
  const requests = store.table(sqliteRequests, as_requestsPg);
  const grants = store.table(sqliteGrants, as_grantsPg);
  const tokens = store.table(sqliteTokens, as_tokensPg);
  const users = store.table(sqliteUsers, usersPg);
  const owners = createTtlCache<AccessTokenOwner>(ACCESS_TOKEN_CACHE_MS, 10_000, clock);
  const ownerOf = store.prepareFirst<AccessTokenOwner>(
    "as_access_token_owner",
    db
      .select({
        digest: tokens.digest,
        kind: tokens.kind,
        expires_at: tokens.expires_at,
        grant_id: grants.id,
        connector_id: grants.connector_id,
        virtual_server_id: grants.virtual_server_id,
        client_id: grants.client_id,
        user_id: users.id,
        username: users.username,
        role: users.role,
        disabled_at: users.disabled_at,
      })
      .from(tokens)
      .innerJoin(grants, eq(grants.id, tokens.grant_id))
      .innerJoin(users, eq(users.id, grants.user_id))
      .where(eq(tokens.digest, sql.placeholder("digest"))),
  );
  const first = <T>(rows: T[]) => rows[0];

  return {
    findClient: async (clientId) => first(await db.select().from(clients).where(eq(clients.client_id, clientId)).limit(1)),
    registerClient: (row, limits) =>
      store.transaction(function* (tx, lock) {
        yield lock("as_clients:registered");
        const unused = and(eq(clients.kind, "registered"), isNull(clients.last_used_at), gt(clients.expires_at, row.created_at));
        const kept = (where: SQL | undefined) =>
          tx
            .select({
              n: sql<number>`count(*)`.mapWith(Number),
              until: sql<number | null>`min(${clients.expires_at})`.mapWith(Number),
            })
            .from(clients)
            .where(where);
        const [service]: { n: number; until: number }[] = yield kept(unused);
        if (service && service.n >= limits.max) return { bound: "service", until: service.until };
        const [address]: { n: number; until: number }[] = yield kept(
          and(unused, eq(clients.registered_from, row.registered_from ?? "")),
        );
        if (address && address.n >= limits.perAddress) return { bound: "address", until: address.until };
        yield tx.insert(clients).values(row);
        return undefined;
      }),
    async saveMetadataClient(row) {
      await db
        .insert(clients)
        .values(row)
        .onConflictDoUpdate({ target: clients.client_id, set: { metadata: row.metadata, expires_at: row.expires_at } });
    },
    async touchClient(clientId, at) {
      // Used: it no longer counts against the address it was registered from.
      await db.update(clients).set({ last_used_at: at, registered_from: null }).where(eq(clients.client_id, clientId));
    },
    saveRequest: (row, perUser) =>
      store.transaction(function* (tx, lock) {
        yield lock(`as_requests:${row.user_id}`);
        const kept: { handle_digest: string }[] = yield tx
          .select({ handle_digest: requests.handle_digest })
          .from(requests)
          .where(eq(requests.user_id, row.user_id))
          .orderBy(desc(requests.expires_at), desc(requests.handle_digest))
          .limit(perUser - 1);
        yield tx.delete(requests).where(
          and(
            eq(requests.user_id, row.user_id),
            kept.length
              ? notInArray(
                  requests.handle_digest,
                  kept.map((k) => k.handle_digest),
                )
              : undefined,
          ),
        );
        yield tx.insert(requests).values(row);
      }),
    findRequest: async (handleDigest) =>
      first(await db.select().from(requests).where(eq(requests.handle_digest, handleDigest)).limit(1)),
    takeRequest: async (handleDigest) =>
      first(await db.delete(requests).where(eq(requests.handle_digest, handleDigest)).returning()),
    async insertGrant(row) {
      await db.insert(grants).values(row);
    },
    findGrant: async (id) => first(await db.select().from(grants).where(eq(grants.id, id)).limit(1)),
    grantsOf: async (userId) =>
      db.select().from(grants).where(eq(grants.user_id, userId)).orderBy(asc(grants.created_at), asc(grants.id)),
    async deleteGrant(userId, id) {
      const deleted = await db
        .delete(grants)
        .where(and(eq(grants.user_id, userId), eq(grants.id, id)))
        .returning({ id: grants.id });
      // Its tokens went with it (cascade): forget what this process remembers of them.
      if (deleted.length) owners.clear();
      return deleted.length === 1;
    },
    async touchGrant(id, at) {
      await db.update(grants).set({ last_used_at: at }).where(eq(grants.id, id));
    },
    async insertToken(row) {
      await db.insert(tokens).values(row);
    },
    findToken: async (digest) => first(await db.select().from(tokens).where(eq(tokens.digest, digest)).limit(1)),
    useToken: async (digest, kind, at) =>
      (
        await db
          .update(tokens)
          .set({ used_at: at })
          .where(and(eq(tokens.digest, digest), eq(tokens.kind, kind), isNull(tokens.used_at)))
          .returning({ digest: tokens.digest })
      ).length === 1,
    async deleteToken(digest) {
      owners.delete(digest);
      await db.delete(tokens).where(eq(tokens.digest, digest));
    },
    accessTokenOwner: (digest) => owners.readThrough(digest, () => ownerOf({ digest })),
    async deleteExpired(now, emptyBefore) {
      const gone = [
        ...(await db.delete(requests).where(lte(requests.expires_at, now)).returning({ d: requests.handle_digest })),
        ...(await db.delete(tokens).where(lte(tokens.expires_at, now)).returning({ d: tokens.digest })),
        // A grant whose code was never exchanged, or whose refresh token ran out: nothing can use it any more.
        ...(await db
          .delete(grants)
          .where(
            and(
              lt(grants.created_at, emptyBefore),
              notExists(db.select({ d: tokens.digest }).from(tokens).where(eq(tokens.grant_id, grants.id))),
            ),
          )
          .returning({ d: grants.id })),
        ...(await db
          .delete(clients)
          .where(and(eq(clients.kind, "registered"), isNull(clients.last_used_at), lt(clients.expires_at, now)))
          .returning({ d: clients.client_id })),
      ];
      return gone.length;
    },
  };
}
