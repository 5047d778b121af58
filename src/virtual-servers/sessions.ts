import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { Principal } from "../users/model";
import { isRequestId, SSE_HEADERS, sseEvent, type RequestId } from "./jsonrpc";
import type { ListKind } from "./list-cursor";
import { openMemberSession, type ChangedList, type MemberSession } from "./member-session";
import type { Member } from "./merge";
import type { Admission } from "./names";
import { createRelay, type Channel, type Relay } from "./relay";

/** A list's last merge in a session: what it admitted, and the members left out of it with why. */
export type Listing = { admission: Admission; failed: { member: Member; why: string }[] };

/** How long a client session lives unused (then 404: the client initializes again). */
export const SESSION_IDLE_MS = 30 * 60_000;
/**
 * How long list changes are gathered before the client is told: members changing at once (a deployment, a membership
 * change) make one notification per list, not one per member.
 */
export const LIST_CHANGED_COALESCE_MS = 50;
const encoder = new TextEncoder();
/** A comment this often keeps idle proxies from closing a quiet GET stream (as /api/v1/events does, every 15 s). */
export const HEARTBEAT_MS = 15_000;
/** The cached listings a change of each list makes stale (resources: their templates too). */
const STALE: Record<ChangedList, ListKind[]> = {
  tools: ["tools"],
  prompts: ["prompts"],
  resources: ["resources", "resource_templates"],
};

/** One client session of a virtual server: whose, which server, and its upstream sessions, one per member at most. */
export type ClientSession = {
  id: string;
  serverId: string;
  /** Who sends now: each request's own authentication (a revoked token stops the session's member calls too). */
  caller: Principal;
  protocolVersion: string;
  /** What the client declared at initialize (what the members are offered in its name: member-session.ts). */
  capabilities: ClientCapabilities;
  /** Each list's last merge, what a call's name resolves through (issue 24 item 4). */
  listings: Map<ListKind, Listing>;
  /** The client's requests being served, by the client's id: what its notifications/cancelled can name. */
  calls: Map<RequestId, AbortController>;
  /** The members' requests to the client, waiting for its answers (relay.ts). */
  relay: Relay;
  /** The member's upstream session, opened on first use (member-session.ts). */
  member(connectorId: string): MemberSession;
};

type Held = ClientSession & {
  members: Map<string, MemberSession>;
  usedAt: number;
  /** The client's GET stream, while open, and how it is ended. */
  stream?: { channel: Channel; end(): void };
  /** List changes gathered for the next notification (LIST_CHANGED_COALESCE_MS). */
  changed: Set<ChangedList>;
  flush?: ReturnType<typeof setTimeout>;
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
  const sessions = new Map<string, Held>();

  /** Ends a client session and every upstream session it opened (DELETE at each member). */
  async function end(id: string): Promise<void> {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    session.stream?.end();
    clearTimeout(session.flush);
    for (const call of session.calls.values()) call.abort("The client session ended");
    session.relay.close();
    await Promise.all([...session.members.values()].map((member) => member.close()));
  }

  /**
   * A list changed (a member said so, or the members changed): its cached listing is dropped, so the next call
   * resolves through a new one, and the client's GET stream is told, once for what changed together (MCP 2025-11-25
   * server/tools "List Changed Notification", and likewise prompts and resources).
   */
  function changed(session: Held, lists: readonly ChangedList[]) {
    for (const list of lists) for (const kind of STALE[list]) session.listings.delete(kind);
    if (!session.stream) return;
    for (const list of lists) session.changed.add(list);
    session.flush ??= setTimeout(() => {
      session.flush = undefined;
      for (const list of session.changed)
        session.stream?.channel({ jsonrpc: "2.0", method: `notifications/${list}/list_changed` });
      session.changed.clear();
    }, LIST_CHANGED_COALESCE_MS);
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
    open(serverId: string, caller: Principal, protocolVersion: string, capabilities: ClientCapabilities): ClientSession {
      const now = deps.clock();
      sweep(now);
      const members = new Map<string, MemberSession>();
      const exchange = (connectorId: string, request: Request) => deps.exchange(session.caller, connectorId, request);
      const peer = {
        capabilities,
        stream: () => session.stream?.channel,
        relay: createRelay(),
        listChanged: (list: ChangedList) => changed(session, [list]),
        resourceUpdated: (params: Record<string, unknown>) =>
          void session.stream?.channel({ jsonrpc: "2.0", method: "notifications/resources/updated", params }),
      };
      const session: Held = {
        id: deps.newId(),
        usedAt: now,
        serverId,
        caller,
        protocolVersion,
        capabilities,
        listings: new Map<ListKind, Listing>(),
        calls: new Map(),
        relay: peer.relay,
        members,
        changed: new Set(),
        member(connectorId: string) {
          let member = members.get(connectorId);
          if (!member) members.set(connectorId, (member = openMemberSession(exchange, connectorId, peer)));
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

    /**
     * Opens the session's GET stream (MCP 2025-11-25 basic/transports "Listening for Messages from the Server"): the
     * members' list changes and resource updates, and their requests outside a call. One at a time: undefined when
     * one is open already. The members' own GET streams are held open as long as it is.
     */
    listen(client: ClientSession): Response | undefined {
      const session = sessions.get(client.id);
      if (!session || session.stream) return undefined;
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const send = (bytes: Uint8Array) => {
        try {
          controller.enqueue(bytes);
          return true;
        } catch {
          stop();
          return false;
        }
      };
      // A comment now (the response starts at once) and every HEARTBEAT_MS (idle proxies keep the stream), as the
      // event stream of /api/v1/events does.
      const heartbeat = setInterval(() => send(encoder.encode(": heartbeat\n\n")), HEARTBEAT_MS);
      const stop = () => {
        if (session.stream !== stream) return;
        clearInterval(heartbeat);
        session.stream = undefined;
        for (const member of session.members.values()) member.unlisten();
      };
      const stream = {
        channel: (message: Record<string, unknown>) => send(sseEvent(message)),
        end: () => {
          stop();
          try {
            controller.close();
          } catch {
            // The client closed it first.
          }
        },
      };
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c), cancel: stop });
      send(encoder.encode(": connected\n\n"));
      session.stream = stream;
      for (const member of session.members.values()) member.listen();
      return new Response(body, { headers: SSE_HEADERS });
    },

    /**
     * A message the client sent that is not a request (basic/transports: answered 202): a cancellation goes to the
     * one member serving that request, as the SDK client's own (basic/utilities/cancellation); progress and answers
     * to a member's request go to that member (relay.ts); a roots change to the members offered roots.
     */
    receive(client: ClientSession, message: { id?: unknown; method?: unknown; params?: unknown }): void {
      const session = sessions.get(client.id);
      if (!session) return;
      const params = (typeof message.params === "object" && message.params !== null ? message.params : {}) as Record<
        string,
        unknown
      >;
      if (message.method === undefined) void session.relay.answer(message);
      else if (message.method === "notifications/cancelled" && isRequestId(params.requestId))
        session.calls.get(params.requestId)?.abort(typeof params.reason === "string" ? params.reason : "Cancelled by the client");
      else if (message.method === "notifications/progress") void session.relay.progress(params);
      else if (message.method === "notifications/roots/list_changed")
        for (const member of session.members.values()) void member.rootsChanged();
    },

    /**
     * The virtual server's members changed (docs/interface.md §9.1): each of its sessions' lists may have, and the
     * upstream sessions with the members `gone` end (they would go on telling of changes no listing shows).
     */
    membersChanged(serverId: string, gone: readonly string[]): void {
      for (const session of sessions.values()) {
        if (session.serverId !== serverId) continue;
        changed(session, ["tools", "prompts", "resources"]);
        for (const connectorId of gone) {
          const member = session.members.get(connectorId);
          session.members.delete(connectorId);
          void member?.close();
        }
      }
    },
  };
}
export type ClientSessions = ReturnType<typeof createClientSessions>;
