import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../observability/logger";
import { answerInSession, type ServerTransport } from "./json-answers";
import { GATEWAY_ERROR } from "./json-rpc";

export type StdioCommand = { command: string; args: string[]; env: Record<string, string> };

export type GatewaySession = {
  /** The session's transport: it starts the session (initialize) and serves its GET stream and its DELETE. */
  transport: ServerTransport;
  /** One request of the started session; a POST that asks for no progress is answered as JSON (json-answers.ts). */
  handle(request: Request): Promise<Response>;
  pid(): number | null;
  /** When a client last sent a request in this session, and how many are being answered (for the idle sweep). */
  lastActive: number;
  answering: number;
  /** Why the process exited on its own before it answered anything (a server that cannot start), else undefined. */
  failedToStart(): string | undefined;
  /** True once the session is closing or closed (its process gone or going). */
  ended(): boolean;
  close(): Promise<void>;
};

type ProgressToken = string | number;
const isRequest = (
  m: JSONRPCMessage,
): m is JSONRPCMessage & { id: string | number; method: string; params?: Record<string, unknown> } => "method" in m && "id" in m;

/** A result or an error: the answer to a request, by its id. */
const answerId = (m: JSONRPCMessage): string | number | undefined => ("id" in m && !("method" in m) ? m.id : undefined);

/**
 * One MCP session = one stdio server process. Isolation is the point: two clients never share a process,
 * so their requests, ids and notifications cannot interleave (the failure of gateways that attach every
 * session to one process). The SDK's transports do the framing on both sides; this relays messages and
 * routes progress notifications to the request that asked for them (by its progressToken).
 */
/**
 * Writes a stdio server's stderr to the log line by line, tagged with `fields`; the object returned holds the last
 * complete line and the unfinished rest (a server's last words when it exits).
 */
export function logStderr(child: StdioClientTransport, log: Logger, fields: () => Record<string, unknown>) {
  const seen = { tail: "", last: "" };
  child.stderr?.on("data", (chunk: Buffer) => {
    const lines = (seen.tail + chunk.toString("utf8")).split("\n");
    seen.tail = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.trim()) continue;
      seen.last = line.trim();
      log.info("stdio server stderr", { ...fields(), line });
    }
  });
  return seen;
}

export type SessionEvents = {
  /** The session ended, however it ended. */
  closed(session: GatewaySession): void;
  /** The server process answered its first request: it starts. */
  answered(): void;
};

export async function openSession(stdio: StdioCommand, log: Logger, events: SessionEvents): Promise<GatewaySession> {
  const child = new StdioClientTransport({ command: stdio.command, args: stdio.args, env: stdio.env, stderr: "pipe" });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() });
  const progressTo = new Map<ProgressToken, string | number>();
  // Requests sent to the process and not answered yet, each with the transport of the POST its answer goes to (the
  // session's, or the JSON exchange of its POST): if the process exits or the session ends, each gets an error.
  const unanswered = new Map<string | number, ServerTransport>();
  /** A message of the process (or the gateway's error in its place) to the client: an answer to its POST's transport. */
  const toClient = (message: JSONRPCMessage, options?: { relatedRequestId: string | number }) => {
    let via = transport;
    const id = answerId(message);
    if (id !== undefined) {
      via = unanswered.get(id) ?? transport;
      unanswered.delete(id);
    }
    return via.send(message, options);
  };
  const fromClient = (message: JSONRPCMessage, via: ServerTransport) => {
    if (isRequest(message)) {
      unanswered.set(message.id, via);
      const token = (message.params?._meta as { progressToken?: ProgressToken } | undefined)?.progressToken;
      if (token !== undefined) progressTo.set(token, message.id);
    }
    child.send(message).catch((e) => log.warn("could not write to the stdio server", { error: (e as Error).message }));
  };
  /** Every request still waiting gets an error answer instead of silence (written before the transports close). */
  const answerUnanswered = (why: string) => {
    for (const id of [...unanswered.keys()])
      void toClient({ jsonrpc: "2.0", id, error: { code: GATEWAY_ERROR, message: why } }).catch(() => undefined);
  };
  let closing: Promise<void> | undefined;
  let answered = false;
  let exitedUnanswered: string | undefined;

  const session: GatewaySession = {
    transport,
    pid: () => child.pid,
    lastActive: Date.now(),
    answering: 0,
    failedToStart: () => exitedUnanswered,
    ended: () => closing !== undefined,
    handle: (request) => answerInSession(request, transport, fromClient),
    close() {
      // Set before any of it runs: closing the transport calls its onclose, which comes back here.
      closing ??= Promise.resolve().then(async () => {
        // A JSON answer has no stream to end: a request still waiting is answered (an event stream just ends).
        answerUnanswered("The session ended before the stdio server answered");
        await Promise.allSettled([child.close(), transport.close()]);
        events.closed(session);
      });
      return closing;
    },
  };

  const stderr = logStderr(child, log, () => ({ session: transport.sessionId, pid: child.pid }));

  transport.onmessage = (message) => fromClient(message, transport);
  child.onmessage = (message) => {
    let relatedRequestId: string | number | undefined;
    if ("method" in message && message.method === "notifications/progress") {
      relatedRequestId = progressTo.get((message.params as { progressToken: ProgressToken }).progressToken);
    }
    const answers = answerId(message);
    if (answers !== undefined) {
      if (!answered) events.answered();
      answered = true;
      for (const [token, id] of progressTo) if (id === answers) progressTo.delete(token);
    }
    toClient(message, relatedRequestId === undefined ? undefined : { relatedRequestId }).catch((e) => {
      log.debug("a message of the stdio server had no stream to go to", { error: (e as Error).message });
    });
  };
  child.onclose = async () => {
    if (!closing) {
      const { tail, last } = stderr;
      log.warn("stdio server exited; its session ends", { session: transport.sessionId, last_stderr: tail || undefined });
      const why = `The stdio server exited${tail ? `: ${tail.trim()}` : last ? `: ${last}` : ""}`;
      if (!answered) exitedUnanswered = why;
      answerUnanswered(why);
    }
    void session.close();
  };
  transport.onclose = () => void session.close();
  child.onerror = (e) => log.warn("stdio server error", { error: e.message });

  await child.start();
  return session;
}
