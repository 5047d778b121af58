import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { createTtlCache } from "../cache/ttl-cache";
import type { ConnectorState, VirtualServerEventType } from "../connectors/model";
import {
  connector_eventsPg,
  connectors as sqliteConnectors,
  connectorsPg,
  connector_events as sqliteEvents,
} from "../connectors/table";
import { hasRoom } from "../db/caps";
import { newestFirstPage, type PageCursor } from "../db/pages";
import type { Store } from "../db/store";
import {
  virtual_server_members as sqliteMembers,
  virtual_server_membersPg,
  virtual_servers as sqliteServers,
  virtual_serversPg,
} from "./table";

export type VirtualServerRow = typeof sqliteServers.$inferSelect;
/** A member as stored: its connector and resolved prefix, in `position` order. */
export type MemberRow = typeof sqliteMembers.$inferSelect;
/** What the service reads of a member's connector: whose it is, its name (the default prefix) and its state. */
export type MemberConnector = {
  id: string;
  owner_id: string;
  name: string | null;
  state: ConnectorState;
  disconnect_reason: string | null;
};
/** A member with its connector's state, as the resource shows it. */
export type MemberWithState = MemberRow & Pick<MemberConnector, "state" | "disconnect_reason">;
/** Why a write did not happen: the owner has their most, or a member's connector is no longer theirs (deleted meanwhile). */
export type WriteRefused = "limit" | "members";
export type VirtualServerSettings = Partial<Pick<VirtualServerRow, "name" | "description" | "failure_mode" | "tool_mode">>;

/** What the MCP endpoint reads of a virtual server on every request: the row and its members with their state. */
export type EndpointView = { row: VirtualServerRow; members: MemberWithState[] };
/** How long the MCP endpoint's read of a virtual server may be reused (as CONNECTOR_CACHE_MS is for the proxy). */
export const VIRTUAL_CACHE_MS = 1000;

export type VirtualServerRepository = {
  /** Inserts with its members unless the owner already has `maxPerOwner` (checked and written in one transaction). */
  insert(row: VirtualServerRow, members: MemberRow[], maxPerOwner: number): Promise<WriteRefused | undefined>;
  findById(id: string): Promise<VirtualServerRow | undefined>;
  /** Newest first; `ownerId` undefined lists every owner's (administrators). */
  page(ownerId: string | undefined, limit: number, after: PageCursor | undefined): Promise<VirtualServerRow[]>;
  /**
   * For the MCP endpoint: the row and members as of at most VIRTUAL_CACHE_MS ago (this process's own writes show at
   * once; another replica's within that time, as for connectors). Two queries a request cost more than the call.
   */
  endpointView(id: string): Promise<EndpointView | undefined>;
  /** The members of these virtual servers with their connectors' state, each server's in order. */
  membersOf(serverIds: string[]): Promise<MemberWithState[]>;
  /** The connectors with these ids (those that exist). */
  connectors(ids: string[]): Promise<MemberConnector[]>;
  /** Settings, and the members when given (they replace the old ones); undefined when there is no such virtual server. */
  update(
    id: string,
    settings: VirtualServerSettings,
    members: MemberRow[] | undefined,
    at: number,
  ): Promise<VirtualServerRow | WriteRefused | undefined>;
  /** False when there was no such virtual server. */
  delete(id: string, at: number): Promise<boolean>;
  /**
   * Takes a connector out of every virtual server, each with its `virtual_server.updated`; the ones it left. (Its
   * deletion's cascade would take it out too, silently: this runs first so that listeners hear of it.)
   */
  removeConnector(connectorId: string, at: number): Promise<string[]>;
};

/**
 * Virtual servers and their members, on either store. Every change writes its event on the connectors' feed in the
 * same transaction (docs/interface.md §9.1), as connectors/repository.ts does; `onEvent` is told once it committed.
 */
export function createVirtualServerRepository(store: Store, onEvent: () => void = () => {}): VirtualServerRepository {
  const { db } = store;
  const servers = store.table(sqliteServers, virtual_serversPg);
  const members = store.table(sqliteMembers, virtual_server_membersPg);
  const connectors = store.table(sqliteConnectors, connectorsPg);
  const events = store.table(sqliteEvents, connector_eventsPg);

  const eventOf = (type: VirtualServerEventType, row: VirtualServerRow, memberIds: string[], at: number) => ({
    type,
    connector_id: row.id,
    owner_id: row.owner_id,
    data: {
      id: row.id,
      owner_id: row.owner_id,
      name: row.name,
      members: memberIds,
      updated_at: new Date(row.updated_at).toISOString(),
    },
    created_at: at,
  });

  type Tx = Parameters<Parameters<Store["transaction"]>[0]>[0];
  /** Whether every member's connector still exists and belongs to `ownerId`, inside the write's transaction. */
  function* allOwned(tx: Tx, ownerId: string, rows: MemberRow[]): Generator<unknown, boolean, any> {
    if (rows.length === 0) return true;
    const [found] = yield tx
      .select({ n: sql<number>`count(*)`.mapWith(Number) })
      .from(connectors)
      .where(
        and(
          inArray(
            connectors.id,
            rows.map((m) => m.connector_id),
          ),
          eq(connectors.owner_id, ownerId),
        ),
      );
    return (found?.n ?? 0) === rows.length;
  }

  /** The event of a change, naming the members the virtual server has at this point of the transaction. */
  function* announce(tx: Tx, type: VirtualServerEventType, row: VirtualServerRow, at: number): Generator<unknown, void, any> {
    const now: MemberRow[] = yield tx
      .select()
      .from(members)
      .where(eq(members.virtual_server_id, row.id))
      .orderBy(asc(members.position));
    yield tx.insert(events).values(
      eventOf(
        type,
        row,
        now.map((m) => m.connector_id),
        at,
      ),
    );
  }

  const committed = <T>(result: T, wrote: boolean) => {
    if (wrote) onEvent();
    return result;
  };
  const endpointViews = createTtlCache<EndpointView>(VIRTUAL_CACHE_MS, 10_000);

  const repository: VirtualServerRepository = {
    async insert(row, rows, maxPerOwner) {
      const refused: WriteRefused | undefined = await store.transaction(function* (tx, lock) {
        if (!(yield* hasRoom(tx, lock, servers, servers.owner_id, row.owner_id, maxPerOwner))) return "limit";
        if (!(yield* allOwned(tx, row.owner_id, rows))) return "members";
        yield tx.insert(servers).values(row);
        if (rows.length > 0) yield tx.insert(members).values(rows);
        yield tx.insert(events).values(
          eventOf(
            "virtual_server.created",
            row,
            rows.map((m) => m.connector_id),
            row.created_at,
          ),
        );
        return undefined;
      });
      return committed(refused, refused === undefined);
    },
    findById: async (id) => (await db.select().from(servers).where(eq(servers.id, id)).limit(1))[0],
    endpointView: (id) =>
      endpointViews.readThrough(id, async () => {
        const [row]: VirtualServerRow[] = await db.select().from(servers).where(eq(servers.id, id)).limit(1);
        return row && { row, members: await repository.membersOf([id]) };
      }),
    page: (ownerId, limit, after) => newestFirstPage(db, servers, ownerId, limit, after),
    async membersOf(serverIds) {
      if (serverIds.length === 0) return [];
      return db
        .select({
          virtual_server_id: members.virtual_server_id,
          connector_id: members.connector_id,
          position: members.position,
          prefix: members.prefix,
          state: connectors.state,
          disconnect_reason: connectors.disconnect_reason,
        })
        .from(members)
        .innerJoin(connectors, eq(connectors.id, members.connector_id))
        .where(inArray(members.virtual_server_id, serverIds))
        .orderBy(asc(members.virtual_server_id), asc(members.position));
    },
    async connectors(ids) {
      if (ids.length === 0) return [];
      const rows = await db
        .select({
          id: connectors.id,
          owner_id: connectors.owner_id,
          metadata: connectors.metadata,
          state: connectors.state,
          disconnect_reason: connectors.disconnect_reason,
        })
        .from(connectors)
        .where(inArray(connectors.id, ids));
      return rows.map(({ metadata, ...row }) => ({ ...row, name: metadata.name ?? null }));
    },
    async update(id, settings, rows, at) {
      endpointViews.delete(id);
      const result: VirtualServerRow | WriteRefused | undefined = await store.transaction(function* (tx, lock) {
        const [current]: VirtualServerRow[] = yield tx.select().from(servers).where(eq(servers.id, id));
        if (!current) return undefined;
        yield lock(`virtual_servers:${current.owner_id}`);
        if (rows && !(yield* allOwned(tx, current.owner_id, rows))) return "members";
        const [written]: VirtualServerRow[] = yield tx
          .update(servers)
          .set({ ...settings, updated_at: at })
          .where(eq(servers.id, id))
          .returning();
        if (!written) return undefined;
        if (rows) {
          yield tx.delete(members).where(eq(members.virtual_server_id, id));
          if (rows.length > 0) yield tx.insert(members).values(rows);
        }
        yield* announce(tx, "virtual_server.updated", written, at);
        return written;
      });
      endpointViews.delete(id);
      return committed(result, typeof result === "object");
    },
    async delete(id, at) {
      endpointViews.delete(id);
      const deleted = await store.transaction(function* (tx) {
        const [row]: VirtualServerRow[] = yield tx.select().from(servers).where(eq(servers.id, id));
        if (!row) return false;
        // Announced before the delete, with the members it had (the delete's cascade takes them).
        yield* announce(tx, "virtual_server.deleted", { ...row, updated_at: at }, at);
        yield tx.delete(servers).where(eq(servers.id, id));
        return true;
      });
      endpointViews.delete(id);
      return committed(deleted, deleted);
    },
    async removeConnector(connectorId, at) {
      const left = await store.transaction(function* (tx) {
        const memberships: MemberRow[] = yield tx.select().from(members).where(eq(members.connector_id, connectorId));
        yield tx.delete(members).where(eq(members.connector_id, connectorId));
        for (const { virtual_server_id } of memberships) {
          const [written]: VirtualServerRow[] = yield tx
            .update(servers)
            .set({ updated_at: at })
            .where(eq(servers.id, virtual_server_id))
            .returning();
          if (written) yield* announce(tx, "virtual_server.updated", written, at);
        }
        return memberships.map((m) => m.virtual_server_id);
      });
      endpointViews.clear();
      return committed(left, left.length > 0);
    },
  };
  return repository;
}
