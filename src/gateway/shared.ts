import { AsyncLocalStorage } from "node:async_hooks";
import {
  CLIENT_CAPABILITIES_META_KEY,
  PerRequestHTTPServerTransport,
  SUBSCRIPTION_ID_META_KEY,
  type JSONRPCRequest,
  type ServerCapabilities,
} from "@modelcontextprotocol/server";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../observability/logger";
import { VERSION } from "../version";
import { IDLE_SESSION_MS, sweepIdleSessions, whileAnswering } from "./idle";
import { answerInSession, readPostBody, type Gateway, type ServerTransport } from "./json-answers";
import { createListenRouter } from "./listen";
import { MODERN_PROTOCOL_VERSION } from "./era";
import { classifyPost, discoverResult, legacyParams, modernResult, type ModernMessage } from "./modern";
import { GATEWAY_ERROR, jsonRpcError, sessionNotFound } from "./json-rpc";
import { createParkedCalls } from "./parked";
import { CALLER_HEADER } from "./caller";
import { refuseWithoutToken } from "./token";

type Id = string | number;
type Session = { id: string; transport: ServerTransport; lastActive: number; answering: number };
/** Where messages for one request go: a session's transport, a JSON exchange's (json-answers.ts), or a 2026-07-28 request's. */
type Sink = Pick<Transport, "send">;
/**
 * A request sent on to the server: whose it is (a session's, or a 2026-07-28 request's, which has none), its own id, the
 * transport its answer goes back through, and for a 2026-07-28 request its method (its result is reshaped for it).
 */
type Route = {
  session?: Session;
  id: Id;
  via: Sink;
  modern?: string;
  capabilities?: Record<string, unknown>;
  /** Who sent it (caller.ts): a call parked for input is theirs alone. */
  owner?: string;
};
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
  /** The client capabilities the gateway's initialize declares (none unless said: then the server asks nothing). */
  offer?: Record<string, unknown>;
  /**
   * Parks a 2026-07-28 call whose server asks its client something (parked.ts), waiting at most `timeoutMs` for the
   * client's retry; a park is bound to the caller the service names (caller.ts). The server's requests must be told
   * apart by the call they belong to: over HTTP (the era bridge) a request comes on the stream of its call; a stdio
   * server's requests name no call, so with `soleCall` one is taken for the one client call in flight, and refused
   * when several are (the local 2026-07-28 process, and the Kubernetes sidecar). In the sidecar the process serves 2025
   * sessions as well, and their calls count as in flight too: a request during a 2025 session's call, the only one or
   * not, is refused (no session's client is asked: their calls are answered as JSON, where no request can ride).
   */
  parkCalls?: { timeoutMs: number; soleCall?: boolean; seal?: (handle: string) => string };
  /**
   * Sends a client's request to the server and delivers what comes back about it (its answer, its progress, the
   * server's requests during it) instead of the transport; `viaTransport` sends it through the transport after all
   * (the era bridge: era-bridge/direct-send.ts).
   */
  sendRequest?: (
    message: JSONRPCMessage,
    deliver: (reply: JSONRPCMessage) => void,
    viaTransport: (options?: TransportSendOptions) => Promise<void>,
  ) => Promise<void>;
};

export function createSharedGateway({
  server,
  log,
  initTimeoutMs = 60_000,
  token,
  maxSessions = 1000,
  idleSessionMs = IDLE_SESSION_MS,
  offer = {},
  parkCalls,
  sendRequest,
}: SharedGatewayOptions): Gateway & {
  /** Serves one 2026-07-28 request (classified and checked by modern.ts) over the gateway's legacy session. */
  serveModern(request: Request, message: ModernMessage): Promise<Response>;
  /** Requests sent on to the server and not answered yet, and open subscriptions/listen streams. */
  pendingRequests(): number;
  /** Calls waiting for their client's input now, or going on after its retry (parked.ts). */
  parkedCalls(): number;
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
  /** Gateway progress token → the request's own token, its id and the global id it went out as, and where progress goes. */
  const progress = new Map<string, { token: Id; request: Id; global: string; via: Sink }>();
  let counter = 0;
  let initResult: Record<string, unknown> | undefined;
  let closed = false;
  const next = (prefix: string) => `${prefix}-${++counter}`;
  /**
   * Which request a message from the server came for: an HTTP client transport reads a POST's event stream in the
   * asynchronous context of the send that made it, so a server's request on that stream — one about that call (MCP
   * 2025-11-25 basic/transports "Sending Messages to the Server") — finds its request here.
   */
  const sending = new AsyncLocalStorage<string>();

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
      if (!which(route) || route.via === route.session?.transport) continue;
      void route.via
        .send({ jsonrpc: "2.0", id: route.id, error: { code: GATEWAY_ERROR, message: why } } as JSONRPCMessage)
        .catch(() => undefined);
    }
  }

  /** Sends a client's request on to the server under a gateway-unique id, and its progress token as a gateway-unique one. */
  function forward(route: Route, message: Message, params = message.params) {
    const global = next("r");
    routes.set(global, route);
    const meta = params?._meta as { progressToken?: Id } | undefined;
    if (meta?.progressToken !== undefined) {
      const token = next("p");
      progress.set(token, { token: meta.progressToken, request: route.id, global, via: route.via });
      params = { ...params, _meta: { ...meta, progressToken: token } };
    }
    const outgoing = { ...message, id: global, params } as JSONRPCMessage;
    const viaTransport = (options?: TransportSendOptions) => sending.run(global, () => server.send(outgoing, options));
    const sent = sendRequest ? sendRequest(outgoing, (reply) => receive(reply as Message, global), viaTransport) : viaTransport();
    // A request the server's stdio did not take is answered at once instead of waiting for nothing.
    void sent.catch((e) => {
      if (!routes.delete(global)) return;
      const error = { code: GATEWAY_ERROR, message: `The MCP server could not be reached: ${(e as Error).message}` };
      void route.via.send({ jsonrpc: "2.0", id: route.id, error } as JSONRPCMessage).catch(() => undefined);
    });
    return global;
  }

  /** A request of the gateway's own (listen.ts: resources/subscribe, unsubscribe); resolves true if it succeeded. */
  const ask = (method: string, params: Record<string, unknown>) =>
    new Promise<boolean>((resolve) => {
      const via = { send: async (answer: JSONRPCMessage) => resolve(!("error" in answer)) };
      forward({ id: INIT_ID, via }, { jsonrpc: "2.0", id: INIT_ID, method, params } as Message);
    });
  const parked =
    parkCalls &&
    createParkedCalls({
      timeoutMs: parkCalls.timeoutMs,
      ...(parkCalls.seal && { seal: parkCalls.seal }),
      answerServer: (id, answer) => void server.send({ jsonrpc: "2.0", id, ...answer } as JSONRPCMessage).catch(() => undefined),
      abandon: (global, reason) => abandon(global, reason),
    });
  const listen = createListenRouter({ capabilities: () => (initResult?.capabilities ?? {}) as ServerCapabilities, ask });

  /**
   * The one client call in flight, when there is exactly one (the gateway's own requests aside): the call a stdio
   * server's request must be about, since nothing else is running. Several: none can be told (undefined).
   */
  function soleCall(): string | undefined {
    let sole: string | undefined;
    for (const [global, route] of routes) {
      // The gateway's own requests are neither a session's nor a 2026-07-28 client's (told by that, not by their id,
      // which a client may send as its own).
      if (route.session === undefined && route.modern === undefined) continue;
      if (sole !== undefined) return undefined;
      sole = global;
    }
    return sole;
  }

  /** Forgets a request whose client is gone, and tells the server to stop working on it. */
  function abandon(global: string, reason: string) {
    routes.delete(global);
    for (const [token, p] of progress) if (p.global === global) progress.delete(token);
    // (When the server itself went away, there is no one to tell.)
    if (!closed)
      void server
        .send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: global, reason } })
        .catch(() => undefined);
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
          void server
            .send({ ...message, params: { ...message.params, requestId: global } } as JSONRPCMessage)
            .catch(() => undefined);
      }
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      forward({ session, id: message.id, via }, message);
      return;
    }
    if (message.method !== undefined) void server.send(message).catch(() => undefined); // other notifications (roots/list_changed, …)
    // Responses to server→client requests: none are made (no server request is forwarded to a session's client).
  }

  server.onmessage = (raw) => receive(raw as Message, sending.getStore());

  /** A message from the server; `about`: the request whose answer stream carried it, when that is known. */
  function receive(message: Message, about: string | undefined) {
    if (message.id === INIT_ID) {
      if (message.error) return rejectReady(new Error(`the server refused initialize: ${JSON.stringify(message.error)}`));
      initResult = message.result as Record<string, unknown>;
      // Ready once the server has it (an HTTP server gets each message on its own POST, and one sent now could
      // overtake it: a server that registers tools only once initialized would not know them yet).
      void server
        .send({ jsonrpc: "2.0", method: "notifications/initialized" })
        .catch(() => undefined)
        .then(resolveReady);
      return;
    }
    if (message.method === undefined && message.id !== undefined) {
      const route = routes.get(String(message.id));
      if (!route) return;
      routes.delete(String(message.id));
      for (const [token, p] of progress) if (p.global === message.id) progress.delete(token);
      const result =
        route.modern !== undefined && message.result !== undefined
          ? { result: modernResult(route.modern, message.result as Record<string, unknown>, initResult!) }
          : {};
      void route.via.send({ ...message, ...result, id: route.id } as JSONRPCMessage).catch(() => undefined);
      return;
    }
    if (message.method === "notifications/progress") {
      const p = progress.get(String((message.params as { progressToken?: Id } | undefined)?.progressToken));
      if (p)
        void p.via
          .send({ ...message, params: { ...message.params, progressToken: p.token } } as JSONRPCMessage, {
            relatedRequestId: p.request,
          })
          .catch(() => undefined);
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the server during a 2026-07-28 call: the call is parked and its client asked (parked.ts).
      const global = about ?? (parkCalls?.soleCall ? soleCall() : undefined);
      const route = global === undefined ? undefined : routes.get(global);
      if (parked && global !== undefined && route?.modern !== undefined) {
        const request = { id: message.id, method: message.method, ...(message.params && { params: message.params }) };
        const sink = parked.ask(global, { via: route.via, id: route.id }, route.capabilities, request, route.owner);
        if (sink) route.via = sink;
        return;
      }
      // Any other request from the server (sampling, elicitation, roots): no client of a session can be asked.
      // (Not sent when the server went away meanwhile: nothing waits for it then.)
      void server
        .send({
          jsonrpc: "2.0",
          id: message.id,
          error: { code: -32601, message: "The gateway serves several clients and forwards no requests to them" },
        } as JSONRPCMessage)
        .catch(() => undefined);
      return;
    }
    // Not tied to a request (logging, list changes): every session gets it. A 2026-07-28 client gets no log line: the
    // revision sends notifications/message only for a request that asked (its `io.modelcontextprotocol/logLevel`), and
    // a line on stdio names no request. List changes go to the subscriptions/listen streams that asked (listen.ts).
    for (const session of sessions.values()) void session.transport.send(message).catch(() => undefined);
    if (message.method !== undefined) listen.deliver(message as { method: string; params?: Record<string, unknown> });
  }
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
    try {
      await server.send({
        jsonrpc: "2.0",
        id: INIT_ID,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: offer,
          clientInfo: { name: "connector-service-gateway", version: VERSION },
        },
      });
    } catch (error) {
      // Not sent (an HTTP server that refused it, say): no answer will come, so none is waited for.
      rejectReady(error as Error);
    }
    await readyPromise.finally(() => clearTimeout(timer));
  }
  const started = initialize();
  started.catch((e) => log.error("the stdio server did not initialize", { error: (e as Error).message }));

  /**
   * One 2026-07-28 request (modern.ts), served over the gateway's one legacy session with the server: its id and
   * progress token rewritten like a session's, its answer reshaped (modernResult). `server/discover` is answered from
   * the initialize result. If the client goes away before the answer (MCP 2026-07-28 Streamable HTTP: a client cancels
   * by closing its response stream, having no session to post notifications/cancelled in), the server gets
   * `notifications/cancelled`.
   */
  async function serveModern(request: Request, message: ModernMessage): Promise<Response> {
    await started.catch(() => undefined);
    if (!initResult || closed) return jsonRpcError(503, "The MCP server is not ready");
    // Who sent it, as the service names its callers (caller.ts): a call parked for input is theirs alone.
    const owner = request.headers.get(CALLER_HEADER) ?? undefined;
    const token = (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
    if (!("id" in message) || token !== undefined || message.method === "subscriptions/listen")
      return serveOnStream(request, message, owner);
    // Nothing but the answer can come for it (no progress asked; a parked call's input_required is an answer too):
    // a JSON answer, without a transport of its own (bench/RESULTS.md "2026-07-28 clients").
    return new Promise<Response>((resolve) => {
      const via: Sink = { send: async (answer) => resolve(Response.json(answer)) };
      const served = dispatch(message as Message, via, owner);
      // (A request handed over from another replica may be abandoned before it gets here: era-bridge/handoffs.ts.)
      if (request.signal.aborted) served.clientGone();
      else request.signal.addEventListener("abort", () => served.clientGone(), { once: true });
    });
  }

  /** A 2026-07-28 request whose answer may come after messages (progress) or never end (subscriptions/listen). */
  async function serveOnStream(request: Request, message: ModernMessage, owner: string | undefined): Promise<Response> {
    const exchange = new PerRequestHTTPServerTransport({ classification: { era: "modern", revision: MODERN_PROTOCOL_VERSION } });
    let served: { clientGone(): void } | undefined;
    exchange.onmessage = (m) => {
      const message = m as Message;
      if (message.id === undefined) return; // a posted notification has no meaning without a session: accepted, dropped
      if (message.method === "subscriptions/listen") return void listen.open(m as JSONRPCRequest, exchange);
      served = dispatch(message, exchange, owner);
    };
    exchange.onclose = () => {
      served?.clientGone();
      listen.closed(exchange);
    };
    await exchange.start();
    // Rejected only when the client went away before any answer: no one reads what is returned then.
    return exchange.handleMessage(message, { request }).catch(() => new Response(null, { status: 499 }));
  }

  /** Serves one 2026-07-28 request of `owner`, its answer to `via`; `clientGone` when the client stops waiting for it. */
  function dispatch(message: Message, via: Sink, owner: string | undefined): { clientGone(): void } {
    const id = message.id!;
    if (message.method === "server/discover") {
      void via.send({ jsonrpc: "2.0", id, result: discoverResult(initResult!) } as JSONRPCMessage);
      return { clientGone() {} };
    }
    const state = message.params?.requestState;
    if (parked && typeof state === "string") {
      const retried = parked.retry(state, message.params?.inputResponses, { via, id }, owner);
      if ("error" in retried) {
        void via.send({ jsonrpc: "2.0", id, ...retried } as JSONRPCMessage);
        return { clientGone() {} };
      }
      return { clientGone: () => retried.resumed.cancel() };
    }
    const capabilities = (message.params?._meta as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY];
    const global = forward(
      { id, via, modern: message.method, capabilities: capabilities as Record<string, unknown>, owner },
      message,
      legacyParams(message.params),
    );
    return {
      clientGone() {
        // A parked call's answer goes elsewhere now (its client retries): its first client going cancels nothing.
        if (routes.get(global)?.via === via) abandon(global, "The client went away");
      },
    };
  }

  async function mcp(request: Request): Promise<Response> {
    await started.catch(() => undefined);
    if (!initResult) return jsonRpcError(503, "The MCP server is not ready");
    const id = request.headers.get("mcp-session-id");
    if (!id && request.method === "POST") {
      // A POST without a session is a new session's initialize, or a 2026-07-28 request: its body tells which.
      const body = await readPostBody(request);
      if (body !== undefined && "refused" in body) return body.refused;
      const era = body === undefined ? { era: "legacy" as const } : classifyPost(body.parsed, request.headers);
      if (era.era === "refused") return era.response;
      if (era.era === "modern") return serveModern(request, era.message);
      return startSession(request, body?.parsed);
    }
    if (id) {
      const session = sessions.get(id);
      if (!session) return sessionNotFound();
      return whileAnswering(session, () =>
        answerInSession(request, session.transport, (message, via) => fromClient(session, message as Message, via)),
      );
    }
    return startSession(request);
  }

  async function startSession(request: Request, parsedBody?: unknown): Promise<Response> {
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
      for (const [global, route] of routes) if (route.session === session) abandon(global, "The client's session ended");
    };
    await session.transport.start();
    const response = await session.transport.handleRequest(request, { parsedBody });
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
    serveModern,
    pendingRequests: () => routes.size + listen.size(),
    parkedCalls: () => parked?.size() ?? 0,
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
      parked?.endAll("The gateway closed");
      listen.endAll((id) =>
        modernResult("subscriptions/listen", { _meta: { [SUBSCRIPTION_ID_META_KEY]: id } }, initResult ?? {}),
      );
      await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
      await server.close().catch(() => undefined);
    },
  };
  return shared;
}
