import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../observability/logger";
import { VERSION } from "../version";
import type { Gateway } from "./gateway";
import { IDLE_SESSION_MS, sweepIdleSessions, whileAnswering } from "./idle";
import { answerInSession, type ServerTransport } from "./json-answers";
import { GATEWAY_ERROR, jsonRpcError, sessionNotFound } from "./json-rpc";
import { refuseWithoutToken } from "./token";

type Id = string | number;
type Session = { id: string; transport: ServerTransport; lastActive: number; answering: number };
/** A request sent on to the server: whose it is, its own id, and the transport its answer goes back through (json-answers.ts). */
type Route = { session: Session; id: Id; via: ServerTransport };
type Message = JSONRPCMessage & { id?: Id; method?: string; params?: Record<string, unknown>; result?: unknown; error?: unknown };

const INIT_ID = "gateway-initialize";

/**
 * A gateway over ONE server process shared by every session (the Kubernetes sidecar: the server runs in its
 * own container). Sessions must not see each other, so the gateway initializes the server once, answers each
 * session's `initialize` from that, and rewrites what could collide: request ids and progress tokens go out
 * as gateway-unique values and come back as the session's own; responses and progress go only to the session
 * that asked. Notifications not tied to a request (logging, list changes) go to every session.
 */
export type SharedGatewayOptions = {
  server: Transport;
  log: Logger;
  initTimeoutMs?: number;
  token?: string;
  /**
   * Sessions kept at most. They share one process, so each costs only the gateway's memory; but clients that never
   * DELETE leave theirs behind until the idle sweep, and the sidecar's memory is limited (runtime/kubernetes/manifests.ts).
   */
  maxSessions?: number;
  /** A session with no request for this long is closed (idle.ts). */
  idleSessionMs?: number;
};

export function createSharedGateway({
  server,
  log,
  initTimeoutMs = 60_000,
  token,
  maxSessions = 1000,
  idleSessionMs = IDLE_SESSION_MS,
}: SharedGatewayOptions): Gateway & {
  /** Resolves once the server answered initialize; rejects if it does not. */
  ready(): Promise<void>;
  /** Resolves when the server's stdio is gone (the gateway is then of no use). */
  ended(): Promise<void>;
} {
  let resolveEnded!: () => void;
  const endedPromise = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  const sessions = new Map<string, Session>();
  const routes = new Map<string, Route>();
  const progress = new Map<string, { session: Session; token: Id; request: Id }>();
  let counter = 0;
  let initResult: Record<string, unknown> | undefined;
  let closed = false;
  const next = (prefix: string) => `${prefix}-${++counter}`;

  let resolveReady!: () => void;
  let rejectReady!: (e: Error) => void;
  const readyPromise = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  readyPromise.catch(() => undefined);

  /** Requests still waiting whose answer goes to a JSON exchange get an error answer (an event stream would just end). */
  function answerWaiting(which: (route: Route) => boolean, why: string) {
    for (const route of routes.values()) {
      if (!which(route) || route.via === route.session.transport) continue;
      void route.via
        .send({ jsonrpc: "2.0", id: route.id, error: { code: GATEWAY_ERROR, message: why } } as JSONRPCMessage)
        .catch(() => undefined);
    }
  }

  function fromClient(session: Session, message: Message, via: ServerTransport = session.transport) {
    if (message.method === "initialize" && message.id !== undefined) {
      // Answered from the one initialize the server had (same capabilities, server info and version).
      void session.transport.send({ jsonrpc: "2.0", id: message.id, result: initResult! } as JSONRPCMessage);
      return;
    }
    if (message.method === "notifications/initialized") return;
    if (message.method === "notifications/cancelled") {
      const original = (message.params as { requestId?: Id }).requestId;
      for (const [global, route] of routes) {
        if (route.session === session && route.id === original)
          void server.send({ ...message, params: { ...message.params, requestId: global } } as JSONRPCMessage);
      }
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      const global = next("r");
      routes.set(global, { session, id: message.id, via });
      const meta = message.params?._meta as { progressToken?: Id } | undefined;
      let params = message.params;
      if (meta?.progressToken !== undefined) {
        const token = next("p");
        progress.set(token, { session, token: meta.progressToken, request: message.id });
        params = { ...message.params, _meta: { ...meta, progressToken: token } };
      }
      void server.send({ ...message, id: global, params } as JSONRPCMessage);
      return;
    }
    if (message.method !== undefined) void server.send(message); // other notifications (roots/list_changed, …)
    // Responses to server→client requests: none are made (the gateway declares no client capabilities).
  }

  server.onmessage = (raw) => {
    const message = raw as Message;
    if (message.id === INIT_ID) {
      if (message.error) return rejectReady(new Error(`the server refused initialize: ${JSON.stringify(message.error)}`));
      initResult = message.result as Record<string, unknown>;
      void server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      resolveReady();
      return;
    }
    if (message.method === undefined && message.id !== undefined) {
      const route = routes.get(String(message.id));
      if (!route) return;
      routes.delete(String(message.id));
      for (const [token, p] of progress) if (p.session === route.session && p.request === route.id) progress.delete(token);
      void route.via.send({ ...message, id: route.id } as JSONRPCMessage).catch(() => undefined);
      return;
    }
    if (message.method === "notifications/progress") {
      const p = progress.get(String((message.params as { progressToken: Id }).progressToken));
      if (p)
        void p.session.transport
          .send({ ...message, params: { ...message.params, progressToken: p.token } } as JSONRPCMessage, {
            relatedRequestId: p.request,
          })
          .catch(() => undefined);
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the server (sampling, elicitation, roots): no client capability was declared.
      void server.send({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32601, message: "The gateway serves several clients and forwards no requests to them" },
      } as JSONRPCMessage);
      return;
    }
    for (const session of sessions.values()) void session.transport.send(message).catch(() => undefined);
  };
  server.onclose = () => {
    if (closed) return;
    log.error("the shared stdio server went away; every session ends");
    rejectReady(new Error("the server closed its stdio"));
    resolveEnded();
    void shared.close();
  };

  async function initialize() {
    await server.start();
    const timer = setTimeout(
      () => rejectReady(new Error(`no answer to initialize within ${initTimeoutMs / 1000} s`)),
      initTimeoutMs,
    );
    await server.send({
      jsonrpc: "2.0",
      id: INIT_ID,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "connector-service-gateway", version: VERSION },
      },
    });
    await readyPromise.finally(() => clearTimeout(timer));
  }
  const started = initialize();
  started.catch((e) => log.error("the stdio server did not initialize", { error: (e as Error).message }));

  async function mcp(request: Request): Promise<Response> {
    await started.catch(() => undefined);
    if (!initResult) return jsonRpcError(503, "The MCP server is not ready");
    const id = request.headers.get("mcp-session-id");
    if (id) {
      const session = sessions.get(id);
      if (!session) return sessionNotFound();
      return whileAnswering(session, () =>
        answerInSession(request, session.transport, (message, via) => fromClient(session, message as Message, via)),
      );
    }
    if (sessions.size >= maxSessions) return jsonRpcError(503, `Too many sessions (at most ${maxSessions})`);
    const session: Session = {
      id: "",
      transport: new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() }),
      lastActive: Date.now(),
      answering: 0,
    };
    session.transport.onmessage = (message) => fromClient(session, message as Message);
    session.transport.onclose = () => {
      sessions.delete(session.id);
      answerWaiting((route) => route.session === session, "The session ended before the MCP server answered");
      for (const [global, route] of routes) {
        if (route.session !== session) continue;
        routes.delete(global);
        // (When the server itself went away, there is no one to tell.)
        if (!closed)
          void server
            .send({
              jsonrpc: "2.0",
              method: "notifications/cancelled",
              params: { requestId: global, reason: "The client's session ended" },
            })
            .catch(() => undefined);
      }
    };
    await session.transport.start();
    const response = await session.transport.handleRequest(request);
    if (session.transport.sessionId) {
      session.id = session.transport.sessionId;
      sessions.set(session.id, session);
    }
    return response;
  }

  const stopSweep = sweepIdleSessions(
    () => sessions.values(),
    idleSessionMs,
    (session) => {
      log.info("closing an idle session", { session: session.id });
      void session.transport.close();
    },
  );

  const shared = {
    ready: () => readyPromise,
    ended: () => endedPromise,
    async fetch(request: Request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/healthz") {
        return initResult && !closed
          ? Response.json({ status: "ok", sessions: sessions.size })
          : Response.json({ status: "starting" }, { status: 503 });
      }
      if (pathname === "/mcp") return refuseWithoutToken(request, token) ?? mcp(request);
      return new Response("Not Found", { status: 404 });
    },
    sessionCount: () => sessions.size,
    async close() {
      if (closed) return;
      closed = true;
      stopSweep();
      answerWaiting(() => true, "The MCP server went away before it answered");
      await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
      await server.close().catch(() => undefined);
    },
  };
  return shared;
}
