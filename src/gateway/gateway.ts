import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { AppError } from "../http-errors/errors";
import { problemResponse } from "../http-errors/problem";
import type { Logger } from "../observability/logger";
import { IDLE_SESSION_MS, sweepIdleSessions, whileAnswering } from "./idle";
import { readPostBody } from "./json-answers";
import { jsonRpcError, sessionNotFound } from "./json-rpc";
import { refuseWithoutToken } from "./token";
import { mayBeModern } from "./era";
import { loadModern } from "./load-modern";
import type { ModernMessage } from "./modern";
import { logStderr, openSession, type GatewaySession, type StdioCommand } from "./session";
import type { createSharedGateway } from "./shared";

/** The one server process of the 2026-07-28 clients, the shared gateway over it, and its place to give back. */
type ModernProcess = { gateway: ReturnType<typeof createSharedGateway>; release?: () => void; ended: boolean };

export type { Gateway } from "./json-answers";
import type { Gateway } from "./json-answers";

/** The gateway of one process per session: it alone sees a server that exits at every start. */
export type SessionGateway = Gateway & {
  /** Not ready while the server keeps exiting before it answers (CRASH_LOOP_STARTS new sessions in a row). */
  health(): { ready: true } | { ready: false; reason: string };
};

export type GatewayOptions = {
  stdio: StdioCommand;
  log: Logger;
  maxSessions?: number;
  /** A session with no request for this long is closed with its process (idle.ts). */
  idleSessionMs?: number;
  /** The deployment's token (token.ts): /mcp answers only requests that carry it. */
  token?: string;
  /**
   * Takes a place for one more server process, or throws an AppError (answered as a problem document): the local
   * driver's caps (runtime/process-limits.ts). The function returned gives the place back when the process is gone.
   */
  admit?: () => () => void;
  /** How long a 2026-07-28 client's call parked for input waits for its retry (PROXY__INPUT_TIMEOUT_SECONDS). */
  inputTimeoutMs?: number;
};

/**
 * [MCP 2025-11-25 lifecycle §"Initialization"](https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#initialization):
 * only an initialize request starts a session, and it comes alone (the SDK's transport refuses it in a batch).
 */
const startsSession = (parsed: unknown) => {
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  return messages.length === 1 && isInitializeRequest(messages[0]);
};

/** New sessions in a row whose server exited before answering, after which the server is said to crash-loop. */
export const CRASH_LOOP_STARTS = 3;

/**
 * Wraps a stdio MCP server and serves it over MCP Streamable HTTP (2025-06-18 / 2025-11-25 sessions).
 * A new session (an `initialize` without Mcp-Session-Id) starts its own server process; later requests
 * name their session; DELETE, or the process exiting, ends it. The number of processes is bounded.
 */
export function createGateway({
  stdio,
  log,
  maxSessions = 64,
  idleSessionMs = IDLE_SESSION_MS,
  token,
  admit,
  inputTimeoutMs = 300_000,
}: GatewayOptions): SessionGateway {
  const sessions = new Map<string, GatewaySession>();
  const pending = new Set<GatewaySession>();
  // Consecutive sessions whose server could not start, and why the last one could not: the deployment's health.
  let failedStarts = 0;
  let lastFailure = "";
  const failedToStart = (why: string) => {
    failedStarts++;
    lastFailure = why;
  };
  const stopSweep = sweepIdleSessions(
    () => sessions.values(),
    idleSessionMs,
    (session) => {
      log.info("closing an idle session", { session: session.transport.sessionId, pid: session.pid() });
      void session.close();
    },
  );

  /**
   * The process 2026-07-28 clients share (they have no sessions, so no process of their own): started on the first
   * modern request, holding one of the owner's places like any session's (admit), initialized once by the shared
   * gateway that serves it (shared.ts), ended when idle. If it exits, the next modern request starts (and initializes)
   * a new one — never a second initialize to the same process, which some servers do not survive.
   */
  /** A place for one more server process (admit's caps), or the problem document a client gets when there is none. */
  function takePlace(): { release?: () => void } | Response {
    try {
      return { release: admit?.() };
    } catch (e) {
      if (e instanceof AppError) return problemResponse(e);
      throw e;
    }
  }

  let modern: Promise<ModernProcess | Response> | undefined;
  let modernNow: ModernProcess | undefined;
  let closing = false;
  const modernActivity = { lastActive: Date.now(), answering: 0 };
  const stopModernSweep = sweepIdleSessions(
    // Not while it still answers a request (an event stream outlives the fetch that returned it).
    () => (modernNow && modernNow.gateway.pendingRequests() === 0 ? [modernActivity] : []),
    idleSessionMs,
    () => void (modernNow && endModern(modernNow, "idle")),
  );

  async function startModern(): Promise<ModernProcess | Response> {
    const place = takePlace();
    if (place instanceof Response) return place;
    const { release } = place;
    const server = new StdioClientTransport({ command: stdio.command, args: stdio.args, env: stdio.env, stderr: "pipe" });
    const modernLog = log.child({ serves: "2026-07-28 clients" });
    logStderr(server, modernLog, () => ({ pid: server.pid }));
    const { createSharedGateway } = await import("./shared");
    const gateway = createSharedGateway({
      server,
      log: modernLog,
      // The server may ask during a call: the 2026-07-28 client is asked through a parked call, when its call is the
      // only one in flight (a stdio server's request names no call), and one that did not declare what is asked is
      // refused to the server (shared.ts, parked.ts). Not roots: servers ask for them once initialized, outside any
      // call, where no client can be asked (and server-everything, refused them, no longer exits when its stdin ends).
      offer: { elicitation: {}, sampling: {} },
      parkCalls: { timeoutMs: inputTimeoutMs, soleCall: true },
    });
    const started: ModernProcess = { gateway, release, ended: false };
    void gateway.ended().then(() => endModern(started, "its process exited"));
    try {
      await gateway.ready();
    } catch (e) {
      log.error("the stdio server for 2026-07-28 clients did not start", { error: (e as Error).message });
      await endModern(started, "it did not start");
      return jsonRpcError(502, `The stdio server could not be started: ${(e as Error).message}`);
    }
    if (closing) {
      await endModern(started, "the gateway closed while it started");
      return jsonRpcError(503, "The gateway is closing");
    }
    modernNow = started;
    log.info("started the stdio server shared by 2026-07-28 clients", { pid: server.pid });
    return started;
  }

  /** Ends a modern process (once), gives its place back, and forgets it if it is the current one. */
  async function endModern(process: ModernProcess, why: string) {
    if (modernNow === process) {
      modern = undefined;
      modernNow = undefined;
    }
    if (process.ended) return;
    process.ended = true;
    log.info("the stdio server shared by 2026-07-28 clients ends", { why });
    process.release?.();
    await process.gateway.close();
  }

  async function serveModern(request: Request, message: ModernMessage): Promise<Response> {
    if (closing) return jsonRpcError(503, "The gateway is closing");
    modern ??= startModern();
    const process = await modern;
    if (process instanceof Response) {
      modern = undefined;
      return process.clone();
    }
    modernActivity.answering++;
    modernActivity.lastActive = Date.now();
    try {
      return await process.gateway.serveModern(request, message);
    } finally {
      modernActivity.answering--;
      modernActivity.lastActive = Date.now();
    }
  }

  async function mcp(request: Request): Promise<Response> {
    const id = request.headers.get("mcp-session-id");
    if (id) {
      const session = sessions.get(id);
      // [MCP 2025-11-25 transports §"Session Management"](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#session-management): an unknown session is a 404, so the client starts over.
      // One being ended (a DELETE answered, its process still exiting) is as unknown: its transport takes nothing more.
      if (!session || session.ended()) return sessionNotFound();
      return whileAnswering(session, () => session.handle(request));
    }
    if (request.method !== "POST") return jsonRpcError(400, "Bad Request: Mcp-Session-Id header is required");
    // Read before any process starts: a POST that cannot start a session must not cost one.
    const body = await readPostBody(request);
    if (body === undefined) return jsonRpcError(415, "Unsupported Media Type: Content-Type must be application/json");
    if ("refused" in body) return body.refused;
    if (mayBeModern(body.parsed, request.headers)) {
      // Loaded only now (era.ts: the SDK's v2 package is slow to import at start-up).
      const era = (await loadModern()).classifyPost(body.parsed, request.headers);
      if (era.era === "refused") return era.response;
      if (era.era === "modern") return serveModern(request, era.message);
    }
    if (!startsSession(body.parsed))
      return jsonRpcError(400, "Bad Request: Mcp-Session-Id header is required (only an initialize request starts a session)");
    if (sessions.size + pending.size >= maxSessions) return jsonRpcError(503, `Too many sessions (at most ${maxSessions})`);
    const place = takePlace();
    if (place instanceof Response) return place;
    const { release } = place;
    let session: GatewaySession;
    try {
      session = await openSession(stdio, log, {
        closed(s) {
          release?.();
          pending.delete(s);
          if (s.transport.sessionId) sessions.delete(s.transport.sessionId);
          const why = s.failedToStart();
          if (why) failedToStart(why);
        },
        answered: () => (failedStarts = 0),
      });
    } catch (e) {
      release?.();
      log.error("could not start the stdio server", { command: stdio.command, error: (e as Error).message });
      failedToStart(`The stdio server could not be started: ${(e as Error).message}`);
      return jsonRpcError(502, `The stdio server could not be started: ${(e as Error).message}`);
    }
    pending.add(session);
    let response = await session.transport.handleRequest(request, { parsedBody: body.parsed });
    pending.delete(session);
    // A server that exits at once can be gone before its transport saw the request, which then answers as if the
    // session were unknown: the client is told why instead.
    const exited = session.failedToStart();
    if (exited && !response.ok) response = jsonRpcError(502, exited);
    // Kept only if it started and still runs (its process may have exited while the answer was written).
    if (session.transport.sessionId && !session.ended()) {
      // Idle from now: a server slow to start (longer than idleSessionMs) must not see its session swept at once.
      session.lastActive = Date.now();
      sessions.set(session.transport.sessionId, session);
    } else await session.close(); // refused by the transport (a bad Accept, say), or over already: nothing to keep
    return response;
  }

  return {
    async fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/healthz") return Response.json({ status: "ok", sessions: sessions.size });
      if (pathname === "/mcp") return refuseWithoutToken(request, token) ?? mcp(request);
      return new Response("Not Found", { status: 404 });
    },
    sessionCount: () => sessions.size,
    health: () =>
      failedStarts < CRASH_LOOP_STARTS
        ? { ready: true }
        : {
            ready: false,
            reason: `the server exited before answering in ${failedStarts} sessions in a row (last: ${lastFailure})`,
          },
    async close() {
      closing = true;
      stopSweep();
      stopModernSweep();
      // The modern process too, even one still starting (it is ended once started: see startModern).
      const modernProcess = modern?.then((p) => (p instanceof Response ? undefined : endModern(p, "closing")));
      await Promise.allSettled([...sessions.values(), ...pending].map((s) => s.close()).concat(modernProcess ?? []));
    },
  };
}
