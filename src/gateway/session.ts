import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../observability/logger";
import { GATEWAY_ERROR } from "./json-rpc";

export type StdioCommand = { command: string; args: string[]; env: Record<string, string> };

export type GatewaySession = {
  transport: WebStandardStreamableHTTPServerTransport;
  pid(): number | null;
  /** When a client last sent a request in this session (for the idle sweep). */
  lastActive: number;
  /** Why the process exited on its own before it answered anything (a server that cannot start), else undefined. */
  failedToStart(): string | undefined;
  close(): Promise<void>;
};

type ProgressToken = string | number;
const isRequest = (m: JSONRPCMessage): m is JSONRPCMessage & { id: string | number; method: string; params?: Record<string, unknown> } =>
  "method" in m && "id" in m;

/**
 * One MCP session = one stdio server process. Isolation is the point: two clients never share a process,
 * so their requests, ids and notifications cannot interleave (the failure of gateways that attach every
 * session to one process). The SDK's transports do the framing on both sides; this relays messages and
 * routes progress notifications to the request that asked for them (by its progressToken).
 */
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
  // Requests sent to the process and not answered yet: if it exits, each gets an error instead of silence.
  const unanswered = new Set<string | number>();
  let closing: Promise<void> | undefined;
  let answered = false;
  let exitedUnanswered: string | undefined;

  const session: GatewaySession = {
    transport,
    pid: () => child.pid,
    lastActive: Date.now(),
    failedToStart: () => exitedUnanswered,
    close() {
      closing ??= (async () => {
        await Promise.allSettled([child.close(), transport.close()]);
        events.closed(session);
      })();
      return closing;
    },
  };

  let stderrTail = "";
  let lastStderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    const lines = (stderrTail + chunk.toString("utf8")).split("\n");
    stderrTail = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.trim()) continue;
      lastStderr = line.trim();
      log.info("stdio server stderr", { session: transport.sessionId, pid: child.pid, line });
    }
  });

  transport.onmessage = (message) => {
    if (isRequest(message)) {
      unanswered.add(message.id);
      const token = (message.params?._meta as { progressToken?: ProgressToken } | undefined)?.progressToken;
      if (token !== undefined) progressTo.set(token, message.id);
    }
    child.send(message).catch((e) => log.warn("could not write to the stdio server", { error: (e as Error).message }));
  };
  child.onmessage = (message) => {
    let relatedRequestId: string | number | undefined;
    if ("method" in message && message.method === "notifications/progress") {
      relatedRequestId = progressTo.get((message.params as { progressToken: ProgressToken }).progressToken);
    }
    if ("id" in message && !("method" in message) && message.id !== undefined) {
      if (!answered) events.answered();
      answered = true;
      unanswered.delete(message.id);
      for (const [token, id] of progressTo) if (id === message.id) progressTo.delete(token);
    }
    transport.send(message, relatedRequestId === undefined ? undefined : { relatedRequestId }).catch((e) => {
      log.debug("a message of the stdio server had no stream to go to", { error: (e as Error).message });
    });
  };
  child.onclose = async () => {
    if (!closing) {
      log.warn("stdio server exited; its session ends", { session: transport.sessionId, last_stderr: stderrTail || undefined });
      const why = `The stdio server exited${stderrTail ? `: ${stderrTail.trim()}` : lastStderr ? `: ${lastStderr}` : ""}`;
      if (!answered) exitedUnanswered = why;
      for (const id of unanswered) {
        await transport.send({ jsonrpc: "2.0", id, error: { code: GATEWAY_ERROR, message: why } }).catch(() => undefined);
      }
    }
    void session.close();
  };
  transport.onclose = () => void session.close();
  child.onerror = (e) => log.warn("stdio server error", { error: e.message });

  await child.start();
  return session;
}
