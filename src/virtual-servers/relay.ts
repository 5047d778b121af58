import { McpError, type Progress, type Result } from "@modelcontextprotocol/sdk/types.js";
import { INTERNAL_ERROR, isRequestId, type RequestId } from "./jsonrpc";

/**
 * Where a message to the virtual server's client goes: the event stream of one of its calls, or its session's GET
 * stream. False when it cannot go there (the client did not accept an event stream, or went away).
 */
export type Channel = (message: Record<string, unknown>) => boolean;

type Ask = { resolve(result: Result): void; reject(error: Error): void; onprogress?: (progress: Progress) => void };

/**
 * A member's requests to the client (elicitation/create, sampling/createMessage, roots/list), relayed with ids of the
 * virtual server's own: the client answers the virtual server, never a member, and two members' ids never meet (MCP
 * 2025-11-25 basic: a request id is unique per sender in a session, and each member is a sender of its own).
 */
export function createRelay() {
  const asks = new Map<RequestId, Ask>();
  let next = 0;

  return {
    /**
     * Sends a member's request on `channel` and resolves with the client's answer. A progress token the member gave
     * becomes this request's id, so the client's progress reaches that member only (basic/utilities/progress); the
     * member's cancellation (`signal`) is passed on as the client's notifications/cancelled (basic/utilities/cancellation).
     */
    ask(
      channel: Channel,
      method: string,
      params: Record<string, unknown> | undefined,
      options: {
        signal: AbortSignal;
        onprogress?: (progress: Progress) => void;
        /** The client's GET stream, if open: where the member's cancellation goes when `channel` has ended. */
        stream?: () => Channel | undefined;
      },
    ): Promise<Result> {
      const id = `vs-${++next}`;
      const meta = params?._meta as Record<string, unknown> | undefined;
      const tracked = meta?.progressToken !== undefined;
      const sent = tracked ? { ...params, _meta: { ...meta, progressToken: id } } : params;
      return new Promise<Result>((resolve, reject) => {
        const done = () => {
          asks.delete(id);
          options.signal.removeEventListener("abort", cancel);
        };
        const cancel = () => {
          done();
          const reason = options.signal.reason instanceof Error ? options.signal.reason.message : String(options.signal.reason);
          const cancelled = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason } };
          // The call's stream may have ended (the client cancelled the call) while its question still waits: the
          // client is told on its GET stream then, or its question stays open for ever (found by review).
          if (!channel(cancelled)) options.stream?.()?.(cancelled);
          reject(options.signal.reason instanceof Error ? options.signal.reason : new Error(reason));
        };
        asks.set(id, {
          resolve: (result) => (done(), resolve(result)),
          reject: (error) => (done(), reject(error)),
          ...(tracked && options.onprogress && { onprogress: options.onprogress }),
        });
        options.signal.addEventListener("abort", cancel, { once: true });
        if (!channel({ jsonrpc: "2.0", id, method, ...(sent && { params: sent }) })) {
          done();
          // basic/transports "Sending Messages to the Server": only a response stream (text/event-stream) or the
          // GET stream carries a server's request; a call answered as JSON has neither.
          reject(
            new McpError(
              INTERNAL_ERROR,
              `The client cannot be asked ${method} here: its request did not accept text/event-stream and it has no GET stream open`,
            ),
          );
        }
      });
    },

    /** The client's response to one of the relayed requests; false when it answers none (it is then dropped). */
    answer(message: { id?: unknown; result?: unknown; error?: unknown }): boolean {
      const ask = isRequestId(message.id) ? asks.get(message.id) : undefined;
      if (!ask) return false;
      if (typeof message.error === "object" && message.error !== null) {
        const { code, message: text, data } = message.error as { code?: unknown; message?: unknown; data?: unknown };
        const error = new McpError(typeof code === "number" ? code : INTERNAL_ERROR, String(text ?? ""), data);
        // The member gets the client's own message, not the SDK's "MCP error <code>: " prefix.
        error.message = String(text ?? "");
        ask.reject(error);
      } else ask.resolve((message.result ?? {}) as Result);
      return true;
    },

    /** The client's progress on a relayed request, passed to the member that asked; false when it names none. */
    progress(params: Record<string, unknown>): boolean {
      const token = params.progressToken;
      const ask = isRequestId(token) ? asks.get(token) : undefined;
      if (!ask?.onprogress) return false;
      const { progressToken: _token, ...progress } = params;
      ask.onprogress(progress as Progress);
      return true;
    },

    /** The session ended: every request still waiting fails. */
    close(): void {
      for (const ask of [...asks.values()]) ask.reject(new McpError(INTERNAL_ERROR, "The client session ended"));
    },
  };
}
export type Relay = ReturnType<typeof createRelay>;
