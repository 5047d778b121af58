import type { Principal } from "../users/model";
import type { ListKind } from "./list-cursor";
import { openMemberSession, type MemberSession } from "./member-session";
import type { Member } from "./merge";
import type { Admission } from "./names";

/** A list's last merge in a session: what it admitted, and the members left out of it with why. */
export type Listing = { admission: Admission; failed: { member: Member; why: string }[] };

/** How long a client session lives unused (then 404: the client initializes again). */
export const SESSION_IDLE_MS = 30 * 60_000;

/** One client session of a virtual server: whose, which server, and its upstream sessions, one per member at most. */
export type ClientSession = {
  id: string;
  serverId: string;
  /** Who sends now: each request's own authentication (a revoked token stops the session's member calls too). */
  caller: Principal;
  protocolVersion: string;
  /** Each list's last merge, what a call's name resolves through (issue 24 item 4). */
  listings: Map<ListKind, Listing>;
  /** The member's upstream session, opened on first use (member-session.ts). */
  member(connectorId: string): MemberSession;
};

/**
 * The client sessions of this process's virtual server endpoints (MCP 2025-11-25 basic/transports "Session
 * Management"). Kept in memory: a client session lives on the replica that answered its `initialize`, so this slice
 * does not yet cover replicas without sticky sessions (issue 24 item 5 wants the mapping in the store or sealed into
 * the session id). Never shared between client sessions or users: each holds its own upstream sessions.
 */
export function createClientSessions(deps: {
  exchange: (caller: Principal, connectorId: string, request: Request) => Promise<Response>;
  newId: () => string;
  clock: () => number;
}) {
  const sessions = new Map<string, ClientSession & { members: Map<string, MemberSession>; usedAt: number }>();

  /** Ends a client session and every upstream session it opened (DELETE at each member). */
  async function end(id: string): Promise<void> {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    await Promise.all([...session.members.values()].map((member) => member.close()));
  }

  /**
   * Sessions no request used for SESSION_IDLE_MS end, their upstream sessions with them (issue 24 item 5): a client
   * that never sends DELETE leaves nothing open for ever. Swept when a session opens (Map order is opening order,
   * but use is not, so every session is looked at).
   */
  function sweep(now: number) {
    for (const [id, session] of sessions) if (now - session.usedAt > SESSION_IDLE_MS) void end(id);
  }

  return {
    open(serverId: string, caller: Principal, protocolVersion: string): ClientSession {
      const now = deps.clock();
      sweep(now);
      const members = new Map<string, MemberSession>();
      const exchange = (connectorId: string, request: Request) => deps.exchange(session.caller, connectorId, request);
      const session = {
        id: deps.newId(),
        usedAt: now,
        serverId,
        caller,
        protocolVersion,
        listings: new Map<ListKind, Listing>(),
        members,
        member(connectorId: string) {
          let member = members.get(connectorId);
          if (!member) members.set(connectorId, (member = openMemberSession(exchange, connectorId)));
          return member;
        },
      };
      sessions.set(session.id, session);
      return session;
    },
    /** The session with this id, if it is this caller's at this server (anyone else's is as unknown as none). */
    find(id: string, serverId: string, caller: Principal): ClientSession | undefined {
      const session = sessions.get(id);
      if (!session || session.serverId !== serverId || session.caller.id !== caller.id) return undefined;
      const now = deps.clock();
      if (now - session.usedAt > SESSION_IDLE_MS) {
        void end(id);
        return undefined;
      }
      session.usedAt = now;
      session.caller = caller;
      return session;
    },
    end,
  };
}
export type ClientSessions = ReturnType<typeof createClientSessions>;
