import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";

/** The id of the initialize sent again on a new session (never one the gateway chose: it numbers its own). */
const REOPEN_ID = "era-bridge-reopen";
/** How long a new session's initialize may take before the request that needed it fails. */
const REOPEN_TIMEOUT_MS = 15_000;

/** The session requests go out on now (none while one is being opened again), for a sender of its own (direct-send.ts). */
export type SessionNow = { sessionId?: string | undefined; protocolVersion?: string | undefined };
export type ReopeningTransport = Transport & { session(): SessionNow | undefined };

type Answer = { id?: unknown; result?: { protocolVersion?: unknown }; error?: { message?: string } };

const isInitialize = (message: JSONRPCMessage): message is JSONRPCRequest =>
  "method" in message && message.method === "initialize" && "id" in message;

/**
 * A client transport to a 2025 server whose session may be forgotten: MCP 2025-11-25 basic/transports "Session
 * Management" — a server answers 404 to a request with an unknown `Mcp-Session-Id`, and the client must then start a
 * new session with a fresh initialize. The bridge's gateway initialized once and knows nothing of sessions, so this
 * does it below it: on a 404 it opens a new session with the same initialize (its answer kept here), tells the server
 * `notifications/initialized`, and sends the request again, once. The agreed version is sent on every request after
 * initialize (`MCP-Protocol-Version`, basic/transports "Protocol Version Header").
 */
export function reopeningTransport(open: () => StreamableHTTPClientTransport): ReopeningTransport {
  let inner = open();
  let initialize: JSONRPCRequest | undefined;
  let reopening: Promise<void> | undefined;
  let awaitingReopen: ((answer: Answer) => void) | undefined;

  const transport: ReopeningTransport = {
    session() {
      // Once initialize is answered (its version agreed); a server may keep no sessions: then none is named
      // (basic/transports "Session Management").
      if (reopening || inner.protocolVersion === undefined) return undefined;
      return { sessionId: inner.sessionId, protocolVersion: inner.protocolVersion };
    },
    async start() {
      wire(inner);
      await inner.start();
    },
    async send(message, options) {
      if (isInitialize(message)) initialize = message;
      // A session being opened again takes nothing until it is (a request now would go out with no session id).
      if (reopening && message !== initialize) await reopening.catch(() => undefined);
      const used = inner;
      try {
        await used.send(message, options);
      } catch (error) {
        const forgotten = error instanceof StreamableHTTPError && error.code === 404;
        if (!forgotten || !initialize || message === initialize) throw error;
        // Many requests in flight on the forgotten session: the first 404 opens one new session, the others wait for
        // it; one sent on a session already replaced goes again on the new one without opening a third.
        if (used === inner) reopening ??= reopen().finally(() => (reopening = undefined));
        if (reopening) await reopening;
        await inner.send(message, options);
      }
    },
    async close() {
      // basic/transports "Session Management": a client that no longer needs its session DELETEs it.
      await inner.terminateSession().catch(() => undefined);
      await inner.close();
    },
  };

  function wire(current: StreamableHTTPClientTransport) {
    current.onmessage = (message: JSONRPCMessage) => {
      const answer = message as Answer;
      if (answer.id === REOPEN_ID) return awaitingReopen?.(answer);
      if (initialize && answer.id === initialize.id && typeof answer.result?.protocolVersion === "string")
        current.setProtocolVersion(answer.result.protocolVersion);
      transport.onmessage?.(message);
    };
    current.onerror = (error) => transport.onerror?.(error);
    current.onclose = () => {
      if (current === inner) transport.onclose?.();
    };
  }

  async function reopen() {
    const stale = inner;
    inner = open();
    stale.onclose = undefined;
    void stale.close().catch(() => undefined);
    wire(inner);
    await inner.start();
    // Waited for only once the initialize is sent: a send that fails (the server refusing it) leaves no timer and no
    // promise behind (an unhandled rejection would end the process).
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = new Promise<Answer>((resolve, reject) => {
      awaitingReopen = resolve;
      timer = setTimeout(() => reject(new Error("no answer to initialize on a new session")), REOPEN_TIMEOUT_MS);
    });
    answered.catch(() => undefined);
    let answer: Answer;
    try {
      await inner.send({ ...initialize!, id: REOPEN_ID });
      answer = await answered;
    } finally {
      clearTimeout(timer);
      awaitingReopen = undefined;
    }
    if (typeof answer.result?.protocolVersion !== "string")
      throw new Error(`the server refused initialize on a new session: ${answer.error?.message ?? "no version"}`);
    inner.setProtocolVersion(answer.result.protocolVersion);
    await inner.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  }

  return transport;
}
