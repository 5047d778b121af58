import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { ConnectorRow } from "../connectors/repository";
import { isModernPost, MODERN_PROTOCOL_VERSION } from "../gateway/era";
import { readPostBody } from "../gateway/json-answers";
import { messageReadAlready } from "../http/read-already";
import { jsonRpcError, sessionNotFound } from "../gateway/json-rpc";
import { AppError, ServiceUnavailable, TooManyRequests, UpstreamFailed } from "../http-errors/errors";
import type { Logger } from "../observability/logger";
import type { Principal } from "../users/model";
import { createHash } from "node:crypto";
import type { LegacyInit, LegacySessionStore } from "./legacy-session-store";

/**
 * One MCP request of `caller` to a connector's proxy URL, through the proxy's own service; `policy: false` is the
 * owner's unfiltered listing (proxy/server-tools.ts), whose session's requests are sent on unfiltered too.
 */
export type PolicyHop = (
  caller: Principal,
  connectorId: string,
  request: Request,
  options: { policy: boolean },
) => Promise<Response>;

export type LegacySessionsOptions = {
  hop: PolicyHop;
  log: Logger;
  clock: () => number;
  /** A session no request used for this long is ended (its client gets 404 and initializes again). */
  idleMs?: number;
  /** Sessions held at most in one replica's memory; beyond, the longest idle leaves it (the store keeps it). */
  maxSessions?: number;
  /** Sessions one user may have open, on every replica; beyond, 429. */
  maxPerUser?: number;
  /**
   * Where sessions are kept for every replica (legacy-session-store.ts): a replica takes up a session another opened,
   * and a session ended on one is ended on all.
   */
  store: LegacySessionStore;
};

/** How often a replica makes sure a session it holds was not ended on another (DELETE there, or idle). */
const RECHECK_MS = 1_000;
/** How often a session's use is written to the store: enough for an idle limit of minutes. */
const TOUCH_MS = 60_000;

/** The MCP SDK v2 client package, loaded on the first session (it costs some 70 ms to import: gateway/era.ts). */
type V2 = typeof import("@modelcontextprotocol/client");
type ModernClient = InstanceType<V2["Client"]>;
type Discover = NonNullable<ReturnType<ModernClient["getDiscoverResult"]>>;
type Extra = Parameters<NonNullable<Server["fallbackRequestHandler"]>>[1];
type Init = LegacyInit;

type Session = {
  id?: string;
  owner: string;
  /** The client's initialize, as the store keeps it for another replica to take the session up. */
  init: Init;
  lastUsed: number;
  /** When the store last heard of its use, and when this replica last made sure the store still has it. */
  touched: number;
  checked: number;
  inFlight: number;
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  /** The level `logging/setLevel` chose; sent in each request's envelope (2026-07-28 has no session to keep it). */
  logLevel?: string;
  /** URIs `resources/subscribe` named: the listen filter's `resourceSubscriptions`. */
  resources: Set<string>;
  /** The session's `subscriptions/listen`, feeding its GET stream; opened when the client opens that stream. */
  listening?: Promise<ModernClient | undefined>;
  /** Opens `listening`, or opens it again with the current filter. */
  listen(): Promise<ModernClient | undefined>;
  close(): Promise<void>;
};

const LIST_CHANGED = [
  ["tools", "notifications/tools/list_changed"],
  ["prompts", "notifications/prompts/list_changed"],
  ["resources", "notifications/resources/list_changed"],
] as const;

/**
 * 2025 clients (sessions: `initialize`, `Mcp-Session-Id`, the GET stream) in front of a server that speaks only
 * 2026-07-28 (docs/behaviour.md "Protocol eras"; MCP 2026-07-28 says these two cannot talk). The proxy keeps the
 * sessions itself, in the store for every replica and in the memory of each replica serving one: each session is an
 * MCP SDK v1 `Server` over the SDK's Streamable HTTP server transport (MCP 2025-11-25 basic/transports "Session
 * Management"), and every request it gets is sent on to the server as a 2026-07-28 request by an MCP SDK v2 `Client`
 * pinned to that revision, whose fetch is the hop: the proxy's own service, as the caller — so credentials, tool
 * policy, pinning, rate limits and the audit trail apply to each message as to any client's.
 */
export function createLegacySessions({
  hop,
  log,
  clock,
  idleMs = 30 * 60_000,
  maxSessions = 1000,
  maxPerUser = 100,
  store,
}: LegacySessionsOptions) {
  /** Sessions being opened (their initialize not answered yet), per user. */
  const opening = new Map<string, number>();
  const sessions = new Map<string, Session>();
  let v2: Promise<V2> | undefined;
  const loadV2 = () => (v2 ??= import("@modelcontextprotocol/client"));

  const ownerOf = (caller: Principal, id: string, policy: boolean) =>
    `${id}\n${caller.id}\n${caller.credential ?? ""}\n${caller.virtualServer ?? ""}\n${policy}`;
  /** The owner as the store keeps it: a digest (who the caller is, not how they signed in, stays out of the rows). */
  const ownerDigest = (owner: string) => createHash("sha256").update(owner).digest("base64url");
  /** Sessions being taken up from the store here, by id: two requests of one session take it up once. */
  const resuming = new Map<string, Promise<Session | undefined>>();

  /**
   * A v2 client of the server for one exchange, speaking for the session's 2025 client: its clientInfo and
   * capabilities are the envelope of every request (MCP 2026-07-28 basic "Request metadata"). It adopts the session's
   * `server/discover` answer (`prior`), so it sends nothing to connect.
   */
  async function modernClient(caller: Principal, id: string, init: Init, discover?: Discover) {
    const { Client, StreamableHTTPClientTransport } = await loadV2();
    const url = new URL(`http://bridge.invalid/api/v1/connectors/${id}/mcp`);
    const transport = new StreamableHTTPClientTransport(url, {
      fetch: (input, requestInit) => hop(caller, id, new Request(input, requestInit), { policy: init.policy }),
    });
    const client = new Client(init.clientInfo, {
      capabilities: init.capabilities,
      versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } },
    } as never);
    await client.connect(transport, discover ? { prior: { kind: "modern", discover } } : {});
    return { client, transport };
  }

  /**
   * A session for `caller`'s `initialize`; `resumed`: one taken up from the store, under its own id and log level (its
   * initialize is then replayed to it here, unseen by the client, which initialized it on another replica).
   */
  async function open(
    caller: Principal,
    id: string,
    initialize: JSONRPCRequest,
    policy: boolean,
    resumed?: { sessionId: string; logLevel: string | undefined },
  ): Promise<Session> {
    const params = (initialize.params ?? {}) as Partial<Init>;
    const init: Init = {
      clientInfo: params.clientInfo ?? { name: "unknown", version: "0" },
      capabilities: params.capabilities ?? {},
      protocolVersion: params.protocolVersion ?? "2025-11-25",
      policy,
    };
    // MCP 2025-11-25 basic/lifecycle "Initialization" is answered from MCP 2026-07-28 `server/discover`, asked as the
    // caller (the v2 client's pinned connect sends it with the client's own envelope).
    let probe: Awaited<ReturnType<typeof modernClient>>;
    try {
      probe = await modernClient(caller, id, init);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new UpstreamFailed(
        `The server's server/discover failed, so no 2025 session can be answered: ${(error as Error).message}`,
      );
    }
    const discover = probe.client.getDiscoverResult()!;
    const capabilities = probe.client.getServerCapabilities() ?? {};
    const serverInfo = probe.client.getServerVersion() ?? { name: "unknown", version: "0" };
    const instructions = probe.client.getInstructions();
    await probe.client.close().catch(() => undefined);

    const [{ Server }, { WebStandardStreamableHTTPServerTransport }, types] = await Promise.all([
      import("@modelcontextprotocol/sdk/server/index.js"),
      import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
      import("@modelcontextprotocol/sdk/types.js"),
    ]);
    // The SDK's own initialize agrees the client's version when it knows it (2025-11-25, 2025-06-18, …), else its latest.
    const server = new Server(serverInfo as never, {
      capabilities: capabilities as never,
      ...(instructions && { instructions }),
    });
    const session: Session = {
      owner: ownerOf(caller, id, policy),
      init,
      lastUsed: clock(),
      touched: clock(),
      checked: clock(),
      inFlight: 0,
      server,
      ...(resumed?.logLevel !== undefined && { logLevel: resumed.logLevel }),
      resources: new Set(),
      listen: () => relisten(caller, id, init, discover, session),
      transport: new WebStandardStreamableHTTPServerTransport({
        // basic/transports "Session Management": a cryptographically secure, globally unique session id.
        sessionIdGenerator: resumed ? () => resumed.sessionId : () => crypto.randomUUID(),
        onsessioninitialized: (sessionId) => {
          session.id = sessionId;
          sessions.set(sessionId, session);
        },
        // The client ended it (DELETE): on every replica (the others find no row within RECHECK_MS).
        // Gone from the store before the DELETE is answered: no replica (this one included) takes it up after.
        onsessionclosed: async (sessionId) => {
          await store
            .delete(sessionId)
            .catch((e: Error) => log.warn("a 2025 session's row could not be deleted", { error: e.message }));
          void session.close();
        },
      }),
      async close() {
        if (session.id) sessions.delete(session.id);
        const listener = await session.listening?.catch(() => undefined);
        session.listening = undefined;
        await listener?.close().catch(() => undefined);
        await server.close().catch(() => undefined);
      },
    };
    // 2026-07-28 keeps no log level between requests: the session keeps it and each request's envelope carries it.
    server.setRequestHandler(types.SetLevelRequestSchema, async (request) => {
      session.logLevel = request.params.level;
      if (session.id) await store.setLogLevel(session.id, request.params.level);
      return {};
    });
    // MCP 2026-07-28 replaces resources/subscribe with `subscriptions/listen`'s `resourceSubscriptions`.
    server.setRequestHandler(types.SubscribeRequestSchema, async (request) => {
      session.resources.add(request.params.uri);
      if (session.listening) await session.listen();
      return {};
    });
    server.setRequestHandler(types.UnsubscribeRequestSchema, async (request) => {
      session.resources.delete(request.params.uri);
      if (session.listening) await session.listen();
      return {};
    });
    server.fallbackRequestHandler = (request, extra) => forward(caller, id, init, discover, session, request, extra, types);
    await server.connect(session.transport);
    return session;
  }

  /** One request of a session, sent on as a 2026-07-28 request; the server's questions go to the 2025 client. */
  async function forward(
    caller: Principal,
    id: string,
    init: Init,
    discover: Discover,
    session: Session,
    request: JSONRPCRequest,
    extra: Extra,
    types: typeof import("@modelcontextprotocol/sdk/types.js"),
  ) {
    session.inFlight++;
    const { client, transport } = await modernClient(caller, id, init, discover).catch((error) => {
      session.inFlight--;
      throw error;
    });
    // MCP 2026-07-28 basic/patterns/mrtr: an `input_required` result is fulfilled by the v2 client's handlers, which
    // ask the 2025 client as real requests on this call's event stream (2025-11-25 basic/transports "Sending Messages
    // to the Server": requests related to the originating one), then retried with `inputResponses` and `requestState`.
    const asks = [
      ["elicitation", "elicitation/create", types.ElicitResultSchema],
      ["sampling", "sampling/createMessage", types.CreateMessageResultSchema],
      ["roots", "roots/list", types.ListRootsResultSchema],
    ] as const;
    for (const [capability, method, schema] of asks) {
      if (!init.capabilities[capability]) continue;
      client.setRequestHandler(
        method as never,
        (async (asked: { params?: Record<string, unknown> }, ctx: { mcpReq: { signal: AbortSignal } }) =>
          extra.sendRequest({ method, params: asked.params } as never, schema as never, { signal: ctx.mcpReq.signal })) as never,
      );
    }
    // What the server sends during the call (progress under the 2025 client's own token, log messages) goes to the
    // 2025 client on the call's stream, not to the v2 client (which did not ask for progress itself).
    const deliver = transport.onmessage;
    transport.onmessage = (message) => {
      if ("method" in message && !("id" in message)) {
        void extra.sendNotification(message as never).catch(() => undefined);
        return;
      }
      deliver?.(message);
    };
    const params = { ...(request.params as Record<string, unknown> | undefined) };
    if (session.logLevel) params._meta = { ...(params._meta as object), "io.modelcontextprotocol/logLevel": session.logLevel };
    try {
      // `notifications/cancelled` from the 2025 client aborts `extra.signal`; the v2 client then closes the request's
      // response stream, which is how 2026-07-28 cancels (basic/utilities/cancellation).
      return (await client.request({ method: request.method, params } as never, { signal: extra.signal } as never)) as never;
    } finally {
      session.inFlight--;
      session.lastUsed = clock();
      void client.close().catch(() => undefined);
    }
  }

  /** Opens (or opens again, with a new filter) the session's `subscriptions/listen`, feeding its GET stream. */
  function relisten(caller: Principal, id: string, init: Init, discover: Discover, session: Session) {
    const previous = session.listening;
    session.listening = (async () => {
      await (await previous?.catch(() => undefined))?.close().catch(() => undefined);
      const capabilities = (discover.capabilities ?? {}) as Record<
        string,
        { listChanged?: boolean; subscribe?: boolean } | undefined
      >;
      const filter = {
        ...(capabilities.tools?.listChanged && { toolsListChanged: true }),
        ...(capabilities.prompts?.listChanged && { promptsListChanged: true }),
        ...(capabilities.resources?.listChanged && { resourcesListChanged: true }),
        ...(capabilities.resources?.subscribe && session.resources.size > 0 && { resourceSubscriptions: [...session.resources] }),
      };
      if (Object.keys(filter).length === 0) return undefined;
      const { client } = await modernClient(caller, id, init, discover);
      const relay = (notification: { method: string; params?: Record<string, unknown> }) => {
        const { _meta, ...params } = notification.params ?? {};
        void session.server.notification({ method: notification.method, params } as never).catch(() => undefined);
      };
      for (const [, method] of LIST_CHANGED) client.setNotificationHandler(method, relay as never);
      client.setNotificationHandler("notifications/resources/updated", relay as never);
      await client.listen(filter);
      return client;
    })();
    session.listening.catch((error: Error) =>
      log.warn("subscriptions/listen failed; the GET stream gets no notifications", {
        connector_id: id,
        error: error.message,
      }),
    );
    return session.listening;
  }

  /**
   * The session's GET stream (basic/transports "Listening for Messages from the Server"), fed by `subscriptions/listen`
   * for as long as it is open: the listen holds one of the caller's streams at the proxy, so it ends with the GET.
   */
  function listenWhileOpen(session: Session, response: Response): Response {
    if (!session.listening) void session.listen();
    const reader = response.body!.getReader();
    const stop = () => {
      const listening = session.listening;
      session.listening = undefined;
      void listening?.then((client) => client?.close()).catch(() => undefined);
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) {
          stop();
          controller.close();
        } else controller.enqueue(value);
      },
      cancel(reason) {
        stop();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  }

  /**
   * The session `sessionId` as this replica holds it: from memory — once a second making sure the store still has it
   * (ended on another replica: DELETE there, or idle everywhere) and taking the log level chosen there — or taken up
   * from the store when the caller holds it there. Undefined: no such session for this caller.
   */
  async function held(sessionId: string, caller: Principal, id: string, policy: boolean) {
    const session = sessions.get(sessionId);
    if (session) {
      if (clock() - session.checked < RECHECK_MS) return session;
      session.checked = clock();
      const row = await store.find(sessionId);
      // The level `logging/setLevel` chose on another replica reaches this one with the check.
      if (row?.logLevel !== undefined) session.logLevel = row.logLevel;
      if (row) return session;
      await session.close();
      return undefined;
    }
    let taking = resuming.get(sessionId);
    if (!taking) {
      taking = resume(sessionId, caller, id, policy).finally(() => resuming.delete(sessionId));
      resuming.set(sessionId, taking);
    }
    return taking;
  }

  /** Takes up a session another replica opened: the client's initialize replayed to a new session under its id. */
  async function resume(sessionId: string, caller: Principal, id: string, policy: boolean) {
    const row = await store.find(sessionId);
    if (!row || row.connectorId !== id || row.owner !== ownerDigest(ownerOf(caller, id, policy)) || row.usedAt < clock() - idleMs)
      return undefined;
    await roomHere();
    const initialize = {
      jsonrpc: "2.0" as const,
      id: "resumed",
      method: "initialize",
      params: { protocolVersion: row.init.protocolVersion, capabilities: row.init.capabilities, clientInfo: row.init.clientInfo },
    };
    const session = await open(caller, id, initialize, policy, { sessionId, logLevel: row.logLevel });
    const replayed = await session.transport.handleRequest(
      new Request("http://bridge.invalid/", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify(initialize),
      }),
    );
    await replayed.text();
    if (session.id !== sessionId) {
      await session.close();
      return undefined;
    }
    return session;
  }

  /**
   * Room for one more of `userId`'s sessions: at most `maxPerUser` each (one user never pushes out everyone else's,
   * counting those still opening), then at most `maxSessions` in all, the longest idle going first.
   */
  async function makeRoom(userId: string): Promise<void> {
    const mine = (await store.countOf(userId, clock() - idleMs)) + (opening.get(userId) ?? 0);
    if (mine >= maxPerUser)
      throw new TooManyRequests(
        `You have ${mine} 2025 sessions of 2026-07-28-only servers open here (at most ${maxPerUser} per user): end those you no longer use (an MCP client's DELETE) and retry`,
        60,
      );
    await roomHere();
  }

  /** Room for one more session in this replica's memory: at most `maxSessions`, the longest idle going first. */
  async function roomHere(): Promise<void> {
    if (sessions.size < maxSessions) return;
    const idle = [...sessions.values()].filter((s) => s.inFlight === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    if (!idle[0]) throw new ServiceUnavailable(`Too many 2025 sessions in use (at most ${maxSessions}); try again shortly`);
    await idle[0].close();
  }

  const sweep = setInterval(
    () => {
      const now = clock();
      // Here, idle means unused on this replica: the session goes from memory (another may take it up again); in the
      // store, unused on every replica: then it has ended.
      for (const session of sessions.values())
        if (session.inFlight === 0 && now - session.lastUsed >= idleMs) void session.close();
      void store
        .deleteIdle(now - idleMs)
        .catch((e: Error) => log.warn("idle 2025 sessions could not be deleted", { error: e.message }));
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref?.();

  return {
    /**
     * Whether `request` is a 2025 request (not a 2026-07-28 POST: SEP-2243) for a connector whose server is known to
     * speak 2026-07-28 and no earlier revision. A connector whose revisions are unknown is relayed as it always was.
     */
    wants(row: ConnectorRow, request: Request): boolean {
      const versions = row.protocol_versions;
      if (!versions || versions.length === 0 || versions.some((v) => v < MODERN_PROTOCOL_VERSION)) return false;
      return !isModernPost(request);
    },

    /** Serves one request of a 2025 session of `caller` with connector `id`. */
    async serve(caller: Principal, id: string, request: Request, { policy = true } = {}): Promise<Response> {
      const sessionId = request.headers.get("mcp-session-id");
      if (sessionId !== null) {
        const session = await held(sessionId, caller, id, policy);
        // basic/transports "Session Management": an unknown session is 404, and the client starts a new one. Another
        // caller's session is unknown to this one.
        if (!session || session.owner !== ownerOf(caller, id, policy)) return sessionNotFound();
        session.lastUsed = clock();
        if (session.lastUsed - session.touched >= TOUCH_MS) {
          session.touched = session.lastUsed;
          await store.touch(sessionId, session.lastUsed);
        }
        // A request built in-process (a virtual server's member call) carries its message, not a body.
        const given = messageReadAlready(request);
        const response = await session.transport.handleRequest(request, given && { parsedBody: given.message });
        if (request.method !== "GET" || !response.ok || !response.body) return response;
        return listenWhileOpen(session, response);
      }
      const body = await readPostBody(request);
      if (body === undefined) return jsonRpcError(400, "Bad Request: Mcp-Session-Id header is required");
      if ("refused" in body) return body.refused;
      const message = body.parsed as JSONRPCRequest;
      if (Array.isArray(message) || message?.method !== "initialize")
        return jsonRpcError(400, "Bad Request: Mcp-Session-Id header is required");
      await makeRoom(caller.id);
      opening.set(caller.id, (opening.get(caller.id) ?? 0) + 1);
      let session: Session;
      try {
        session = await open(caller, id, message, policy);
      } finally {
        const left = (opening.get(caller.id) ?? 1) - 1;
        if (left > 0) opening.set(caller.id, left);
        else opening.delete(caller.id);
      }
      const response = await session.transport.handleRequest(request, { parsedBody: message });
      if (!session.id) await session.close();
      else {
        const { owner, init } = session;
        await store.insert({ id: session.id, connectorId: id, userId: caller.id, owner: ownerDigest(owner), init }, clock());
      }
      return response;
    },

    /** Sessions open now. */
    size: () => sessions.size,

    /** Ends every session (at shutdown). */
    async closeAll(): Promise<void> {
      clearInterval(sweep);
      const all = [...sessions.values()];
      await Promise.allSettled(all.map((s) => s.close()));
    },
  };
}
export type LegacySessions = ReturnType<typeof createLegacySessions>;
