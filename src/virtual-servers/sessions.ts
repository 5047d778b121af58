import type { ClientCapabilities, LoggingLevel } from "@modelcontextprotocol/sdk/types.js";
import { TooManyRequests } from "../http-errors/errors";
import { pushStream } from "../http/push-stream";
import type { Principal } from "../users/model";
import type { Cancel } from "./cancellation";
import { isRequestId, SSE_HEADERS, sseEvent, type RequestId } from "./jsonrpc";
import type { ListKind } from "./list-cursor";
import { openMemberSession, type ChangedList, type MemberSession } from "./member-session";
import type { Member } from "./merge";
import type { Admission } from "./names";
import { createRelay, type Channel, type Relay } from "./relay";
import type { SessionStore, StoredSession, StoredUpstream } from "./session-store";

/** A list's last merge in a session: what it admitted, and the members left out of it with why. */
export type Listing = { admission: Admission; failed: { member: Member; why: string }[] };

/** How long a client session lives unused (then 404: the client initializes again). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** How often a session's use is written to the store: often enough for the idle limit, seldom enough to cost nothing. */
export const SESSION_TOUCH_MS = 60_000;
/**
 * How long this replica trusts its own copy of a session before asking the store again: a session ended on another
 * replica (DELETE, idle) is gone here within this time.
 */
export const SESSION_RECHECK_MS = 1000;
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
  /** How often its lists changed: a merge begun before a change is not kept in `listings` (it may not show it). */
  listChanges: number;
  /** The client's requests being served, by the client's id: what its notifications/cancelled can name. */
  calls: Map<RequestId, Cancel>;
  /** The members' requests to the client, waiting for its answers (relay.ts). */
  relay: Relay;
  /** The member's upstream session, opened on first use (member-session.ts). */
  member(connectorId: string): MemberSession;
};

type Held = ClientSession & {
  members: Map<string, MemberSession>;
  usedAt: number;
  /** When its use was last written to the store, and when the store last said it still exists. */
  touchedAt: number;
  checkedAt: number;
  /** The client's GET stream, while open, and how it is ended. */
  stream?: { channel: Channel; end(): void };
  /** Ended (DELETE, idle, its virtual server deleted): a request still under way opens no member session in it. */
  ended?: true;
  /** The level the client set with logging/setLevel (this replica's copy of the session). */
  logLevel?: LoggingLevel;
  /** List changes gathered for the next notification (LIST_CHANGED_COALESCE_MS). */
  changed: Set<ChangedList>;
  flush?: ReturnType<typeof setTimeout>;
};

/**
 * The client sessions of the virtual servers' MCP endpoints (MCP 2025-11-25 basic/transports "Session Management"),
 * in the store (session-store.ts) so that any replica answers any request of a session (issue 24 item 5: no sticky
 * sessions), each replica holding what it uses in memory: a request on another replica goes on in the same upstream
 * sessions (their ids are stored, sealed), without a second initialize. What lives in one process stays there: the
 * client's GET stream and a member's requests waiting for the client's answer (on the replica of the call's stream).
 * Never shared between client sessions or users: each holds its own upstream sessions.
 */
export function createClientSessions(deps: {
  exchange: (caller: Principal, connectorId: string, request: Request) => Promise<Response>;
  newId: () => string;
  clock: () => number;
  store: SessionStore;
  /** VIRTUAL__MAX_SESSIONS_PER_USER. */
  maxPerUser: number;
  log: { warn(message: string, fields?: Record<string, unknown>): void };
}) {
  const sessions = new Map<string, Held>();
  /** Each user's sessions being opened on this replica, counted but not yet stored (no entry for none). */
  const opening = new Map<string, number>();

  /** Ends a client session and every upstream session it opened (DELETE at each member), on every replica. */
  async function end(id: string): Promise<void> {
    await deps.store
      .delete(id)
      .catch((e: unknown) => deps.log.warn("could not forget a virtual server session", { error: String(e) }));
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    session.ended = true;
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
    session.listChanges++;
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
  function sweep(now: number): Promise<unknown> {
    const touched: Promise<void>[] = [];
    for (const [id, session] of sessions) {
      // A call under way uses its session however long it runs (a tool reporting progress renews its timeout): its
      // use is noted, here and in the store, rather than the session taken for idle (found by review).
      if (session.calls.size > 0) touched.push(use(session, now));
      else if (now - session.usedAt > SESSION_IDLE_MS) void expire(id, now);
    }
    return Promise.all(touched);
  }

  /** The session is in use now: noted here, and in the store at most every SESSION_TOUCH_MS (settled when written). */
  function use(session: Held, now: number): Promise<void> {
    session.usedAt = now;
    if (now - session.touchedAt <= SESSION_TOUCH_MS) return Promise.resolve();
    session.touchedAt = now;
    return deps.store.touch(session.id, now).catch(() => {});
  }

  /**
   * A session unused here for SESSION_IDLE_MS: ended if the store agrees it is idle (or gone); else another replica
   * uses it, and this replica only lets go of its copy — its upstream sessions are the other replica's too, and stay.
   */
  async function expire(id: string, now: number): Promise<void> {
    const session = sessions.get(id);
    // The store not answering now: tried again at the next sweep.
    const stored = await deps.store.find(id).catch(() => null);
    if (stored === null) return;
    if (!stored || now - Math.max(stored.usedAt, session?.usedAt ?? 0) > SESSION_IDLE_MS) await end(id);
    else if (session && now - session.usedAt > SESSION_IDLE_MS) release(session);
  }

  /** Lets go of this replica's copy of a session without ending it (its GET stream and pending requests end). */
  function release(session: Held) {
    sessions.delete(session.id);
    session.stream?.end();
    clearTimeout(session.flush);
    session.relay.close();
  }

  /** This replica's copy of a stored session: its members' upstream sessions opened (or gone on in) on first use. */
  function hold(stored: StoredSession, caller: Principal): Held {
    const now = deps.clock();
    const members = new Map<string, MemberSession>();
    const exchange = (connectorId: string, request: Request) => deps.exchange(session.caller, connectorId, request);
    const peer = {
      capabilities: stored.capabilities,
      stream: () => session.stream?.channel,
      relay: createRelay(),
      listChanged: (list: ChangedList) => changed(session, [list]),
      resourceUpdated: (params: Record<string, unknown>) =>
        void session.stream?.channel({ jsonrpc: "2.0", method: "notifications/resources/updated", params }),
      logLevel: () => session.logLevel,
      log: (params: Record<string, unknown>) =>
        void session.stream?.channel({ jsonrpc: "2.0", method: "notifications/message", params }),
    };
    const remember = (connectorId: string) => (upstream: StoredUpstream) =>
      deps.store
        .setUpstream(stored.id, connectorId, upstream)
        .catch((e: unknown) => deps.log.warn("could not store a member's upstream session", { error: String(e) }));
    const session: Held = {
      id: stored.id,
      usedAt: now,
      touchedAt: stored.usedAt,
      checkedAt: now,
      serverId: stored.serverId,
      caller,
      protocolVersion: stored.protocolVersion,
      capabilities: stored.capabilities,
      listings: new Map<ListKind, Listing>(),
      listChanges: 0,
      calls: new Map(),
      relay: peer.relay,
      members,
      changed: new Set(),
      member(connectorId: string) {
        let member = members.get(connectorId);
        if (!member) {
          // The upstream session another replica opened for this client session, if one did (asked when it opens).
          member = openMemberSession(exchange, connectorId, peer, {
            resume: () => deps.store.upstream(stored.id, connectorId),
            remember: remember(connectorId),
          });
          // The session ended while a request was under way: the member it asks for now opens nothing.
          if (session.ended) void member.close();
          else members.set(connectorId, member);
        }
        return member;
      },
    };
    sessions.set(session.id, session);
    return session;
  }

  return {
    async open(
      serverId: string,
      caller: Principal,
      protocolVersion: string,
      capabilities: ClientCapabilities,
    ): Promise<ClientSession> {
      const now = deps.clock();
      void sweep(now);
      // Each session may hold an upstream session per member: a client that initializes in a loop is stopped here.
      // The user's sessions opening on this replica count too: initializes sent at once each counted the stored
      // sessions before any was written, and all passed (found by review). (Sessions written by two replicas at once
      // may pass the count together: the bound is per replica exact.)
      const userId = caller.id;
      opening.set(userId, (opening.get(userId) ?? 0) + 1);
      try {
        const held = await deps.store.countOf(userId, now - SESSION_TOUCH_MS - SESSION_IDLE_MS);
        if (held + opening.get(userId)! > deps.maxPerUser)
          throw new TooManyRequests(
            `You hold ${deps.maxPerUser} virtual server sessions, the most a user may (VIRTUAL__MAX_SESSIONS_PER_USER): end one with DELETE, or let one idle out`,
            60,
          );
        const stored: StoredSession = { id: deps.newId(), serverId, userId, protocolVersion, capabilities, usedAt: now };
        await deps.store.insert(stored, now);
        return hold(stored, caller);
      } finally {
        const left = opening.get(userId)! - 1;
        if (left > 0) opening.set(userId, left);
        else opening.delete(userId);
      }
    },
    /**
     * The session with this id, if it is this caller's at this server (anyone else's is as unknown as none): from this
     * replica's memory, or from the store when another replica opened it.
     */
    async find(id: string, serverId: string, caller: Principal): Promise<ClientSession | undefined> {
      const now = deps.clock();
      let session = sessions.get(id);
      if (session && (now - session.checkedAt > SESSION_RECHECK_MS || now - session.usedAt > SESSION_IDLE_MS)) {
        // Ended elsewhere (DELETE on another replica, or idle everywhere): ended here too.
        const stored = await deps.store.find(id);
        if (!stored || now - Math.max(stored.usedAt, session.usedAt) > SESSION_IDLE_MS) {
          await end(id);
          return undefined;
        }
        session.checkedAt = now;
      }
      if (!session) {
        const stored = await deps.store.find(id);
        if (!stored || stored.serverId !== serverId || stored.userId !== caller.id) return undefined;
        if (now - stored.usedAt > SESSION_IDLE_MS) {
          await end(id);
          return undefined;
        }
        // Another request may have held it meanwhile.
        session = sessions.get(id) ?? hold(stored, caller);
      }
      if (session.serverId !== serverId || session.caller.id !== caller.id) return undefined;
      session.caller = caller;
      void use(session, now);
      return session;
    },
    end,
    /**
     * The scheduler's, on every replica: this replica's idle sessions end, their upstream sessions and GET streams with
     * them, though no session opens to sweep them (found by review: they stayed open for ever); sessions no replica
     * used for SESSION_IDLE_MS are forgotten from the store (a replica that held one and went away swept nothing; the
     * members expire their upstream sessions themselves); and the sessions held here that the store no longer has end.
     */
    job: {
      name: "expire-virtual-server-sessions",
      run: async () => {
        const now = deps.clock();
        // The calls' sessions touched before the idle ones are forgotten.
        await sweep(now);
        await deps.store.deleteIdle(now - SESSION_IDLE_MS);
        // Sessions ended elsewhere — a DELETE on another replica, their virtual server or user deleted there — end here
        // too, GET streams and upstream sessions with them, though no request of theirs comes here to find it out.
        const held = [...sessions.keys()];
        if (held.length === 0) return;
        const stored = await deps.store.existing(held);
        for (const id of held) if (!stored.has(id)) void end(id);
      },
    },

    /**
     * Opens the session's GET stream (MCP 2025-11-25 basic/transports "Listening for Messages from the Server"): the
     * members' list changes and resource updates, and their requests outside a call. One at a time: undefined when
     * one is open already. The members' own GET streams are held open as long as it is.
     */
    listen(client: ClientSession): Response | undefined {
      const session = sessions.get(client.id);
      if (!session || session.stream) return undefined;
      // Ended when the client goes away, or stops reading (http/push-stream.ts): the members' streams with it.
      const pushed = pushStream(() => stop());
      const send = (bytes: Uint8Array) => pushed.push(bytes);
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
          pushed.close();
        },
      };
      send(encoder.encode(": connected\n\n"));
      session.stream = stream;
      for (const member of session.members.values()) member.listen();
      return new Response(pushed.body, { headers: SSE_HEADERS });
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
     * server/utilities/logging "Setting Log Level": the level goes to every member that declared logging — those whose
     * sessions are open now, and the others when they open, each waited for `timeout` at most
     * (VIRTUAL__MEMBER_TIMEOUT_SECONDS). Their log messages reach the client's GET stream.
     */
    async setLogLevel(client: ClientSession, level: LoggingLevel, timeout: number): Promise<void> {
      const session = sessions.get(client.id);
      if (!session) return;
      session.logLevel = level;
      await Promise.all([...session.members.values()].map((member) => member.setLogLevel(level, timeout)));
    },

    /**
     * The virtual server was deleted (docs/interface.md §9.1): its sessions end here as a DELETE ends them — GET
     * streams, calls, relayed requests and upstream sessions — rather than going on until they idle out.
     */
    serverDeleted(serverId: string): void {
      for (const session of [...sessions.values()]) if (session.serverId === serverId) void end(session.id);
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
          void deps.store.deleteUpstream(session.id, connectorId).catch(() => {});
        }
      }
    },
  };
}
export type ClientSessions = ReturnType<typeof createClientSessions>;
