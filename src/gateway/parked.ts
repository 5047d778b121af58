import { randomBytes } from "node:crypto";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

type Id = string | number;
/** Where a 2026-07-28 client's answer goes: the transport of the request it is waiting on. */
export type Sink = Pick<Transport, "send">;
type Asked = { key: string; serverId: Id; method: string; params?: Record<string, unknown> };

/** The client-side capability each server→client request needs (MCP 2025-11-25 client/elicitation, client/sampling, client/roots). */
const CAPABILITY: Record<string, string> = {
  "elicitation/create": "elicitation",
  "sampling/createMessage": "sampling",
  "roots/list": "roots",
};

/** MCP 2026-07-28 `InvalidParams` for a retry that does not fit the parked call. */
const INVALID_PARAMS = -32602;

export type ParkedCallsOptions = {
  /** How long a parked call waits for the client's retry (PROXY__INPUT_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** Sends the server the answer to one of its requests. */
  answerServer(id: Id, answer: { result: unknown } | { error: { code: number; message: string } }): void;
  /** Gives up the upstream request (notifications/cancelled to the server). */
  abandon(global: string, reason: string): void;
  /**
   * The `requestState` the client gets for a park's handle (era-bridge/request-state.ts seals it and names the replica);
   * its retry must come back with the handle. The handle itself unless said.
   */
  seal?: (handle: string) => string;
};

/** One upstream request whose client was asked for input: what the server asked, and who waits for what. */
type Park = {
  global: string;
  /** The `requestState` the client must echo to go on (a new one each round: an old one cannot be replayed). */
  state: string;
  /** Asked by the server, not shown to the client yet. */
  pending: Asked[];
  /** Shown to the client in an `input_required`, not answered yet: key → the server's request. */
  shown: Map<string, Asked>;
  /** The client's request waiting now (the original one, then each retry). */
  waiting?: { via: Sink; id: Id };
  /** The upstream request's answer, when it came before the client's retry. */
  final?: JSONRPCMessage & { id?: Id };
  /** Runs while the client is asked (from an input_required until its retry). */
  timer: ReturnType<typeof setTimeout> | undefined;
  counter: number;
  /** Who started the call (caller.ts), when the gateway serves several callers: only they may retry it. */
  owner: string | undefined;
};

/**
 * Parked calls (docs/behaviour.md "Protocol eras"): a 2025 server asks its client something during a call
 * (`elicitation/create`, `sampling/createMessage`, `roots/list`: server→client requests, MCP 2025-11-25), but the
 * client speaks 2026-07-28, which has no server→client requests — it gets an `input_required` result instead (MCP
 * 2026-07-28 multi-round-trip requests: `inputRequests` and an opaque `requestState`) and retries the call with
 * `inputResponses` and the same `requestState`. Meanwhile the upstream request stays open: the client's responses
 * become the answers to the server's requests, and the same upstream call goes on. Each round's park has a random
 * handle (128 bits) into this gateway's parks — a bridge is one caller's (era-bridge/bridges.ts), so another caller's
 * retry finds nothing — which the client gets as `seal(handle)` and the retry brings back as the handle (the bridge
 * seals it, naming the replica: era-bridge/request-state.ts); a call waits at most `timeoutMs` for its retry, then it
 * is cancelled upstream.
 */
export function createParkedCalls({ timeoutMs, answerServer, abandon, seal = (handle) => handle }: ParkedCallsOptions) {
  const byState = new Map<string, Park>();
  const byGlobal = new Map<string, Park>();

  const newState = () => randomBytes(16).toString("base64url");
  const expiry = (park: Park) => {
    const timer = setTimeout(() => end(park, "The client did not answer the server's request in time"), timeoutMs);
    timer.unref?.();
    return timer;
  };

  function end(park: Park, why?: string) {
    clearTimeout(park.timer);
    byState.delete(park.state);
    byGlobal.delete(park.global);
    if (why === undefined) return;
    // A retry waiting for what comes next gets the reason, not silence.
    const { waiting } = park;
    park.waiting = undefined;
    if (waiting)
      void waiting.via
        .send({ jsonrpc: "2.0", id: waiting.id, error: { code: -32603, message: why } } as JSONRPCMessage)
        .catch(() => undefined);
    for (const asked of [...park.pending, ...park.shown.values()])
      answerServer(asked.serverId, { error: { code: -32603, message: why } });
    abandon(park.global, why);
  }

  /** Shows what is pending to the waiting client, or gives it the final answer: whatever the park can do now. */
  function flush(park: Park) {
    const { waiting } = park;
    if (!waiting) return;
    if (park.final) {
      park.waiting = undefined;
      end(park);
      void waiting.via.send({ ...park.final, id: waiting.id } as JSONRPCMessage).catch(() => undefined);
      return;
    }
    if (park.pending.length === 0) return;
    const inputRequests: Record<string, unknown> = {};
    for (const asked of park.pending.splice(0)) {
      park.shown.set(asked.key, asked);
      inputRequests[asked.key] = { method: asked.method, ...(asked.params && { params: asked.params }) };
    }
    byState.delete(park.state);
    park.state = newState();
    byState.set(park.state, park);
    park.waiting = undefined;
    // The client has `timeoutMs` from now to retry (each round its own wait).
    clearTimeout(park.timer);
    park.timer = expiry(park);
    const result = { resultType: "input_required", inputRequests, requestState: seal(park.state) };
    void waiting.via.send({ jsonrpc: "2.0", id: waiting.id, result } as JSONRPCMessage).catch(() => undefined);
  }

  return {
    /**
     * The server asks the client of upstream request `global` (a 2026-07-28 request, its client waiting at `waiting`,
     * having declared `capabilities`): parked, and the client gets `input_required`. Returns the sink that now takes
     * the upstream request's answer. A capability the client did not declare is refused to the server at once.
     */
    ask(
      global: string,
      waiting: { via: Sink; id: Id },
      capabilities: Record<string, unknown> | undefined,
      request: { id: Id; method: string; params?: Record<string, unknown> },
      owner?: string,
    ): Sink | undefined {
      const needs = CAPABILITY[request.method];
      if (!needs || capabilities?.[needs] === undefined) {
        answerServer(request.id, {
          error: { code: -32601, message: `The client did not declare ${needs ?? "a capability"} for ${request.method}` },
        });
        return undefined;
      }
      let park = byGlobal.get(global);
      if (!park) {
        park = {
          global,
          state: newState(),
          pending: [],
          shown: new Map(),
          waiting,
          counter: 0,
          timer: undefined,
          owner,
        };
        byGlobal.set(global, park);
        byState.set(park.state, park);
      }
      park.pending.push({ key: `input-${++park.counter}`, serverId: request.id, method: request.method, params: request.params });
      flush(park);
      const current = park;
      return {
        // The upstream request's answer, once it comes: to the client waiting now, or kept for its retry.
        send: async (message) => {
          current.final = message as Park["final"];
          flush(current);
        },
      };
    },

    /** Whether `global` is parked (its first client's stream closing then cancels nothing). */
    parked: (global: string) => byGlobal.has(global),

    /**
     * A client's retry (`requestState` and `inputResponses` in its params): the responses go to the server as the
     * answers to its requests, and the retry waits for what comes next. An error to send the client if it does not fit.
     */
    retry(
      state: string,
      responses: unknown,
      waiting: { via: Sink; id: Id },
      owner?: string,
    ): { error: { code: number; message: string } } | { resumed: { cancel: () => void } } {
      const park = byState.get(state);
      // Another caller's call is as unknown as none: nothing tells it that the state names a call.
      if (!park || park.owner !== owner)
        return { error: { code: INVALID_PARAMS, message: "requestState names no call waiting for input here" } };
      const answers = (typeof responses === "object" && responses !== null ? responses : {}) as Record<string, unknown>;
      const missing = [...park.shown.keys()].filter((key) => !(key in answers));
      if (missing.length > 0) return { error: { code: INVALID_PARAMS, message: `inputResponses lacks ${missing.join(", ")}` } };
      // MCP 2026-07-28 `InputResponses`: each a result object (ElicitResult, CreateMessageResult, ListRootsResult).
      const notResults = [...park.shown.keys()].filter((key) => {
        const answer = answers[key];
        return typeof answer !== "object" || answer === null || Array.isArray(answer);
      });
      if (notResults.length > 0)
        return { error: { code: INVALID_PARAMS, message: `inputResponses.${notResults[0]} must be a result object` } };
      for (const [key, asked] of park.shown) answerServer(asked.serverId, { result: answers[key] });
      park.shown.clear();
      // A state is good for one retry: the next round gets a new one (flush). The client answered in time: what
      // remains is the server's to do, under the upstream call's own limits.
      byState.delete(state);
      clearTimeout(park.timer);
      park.timer = undefined;
      park.waiting = waiting;
      flush(park);
      // A retry whose client goes away before its answer cancels the call, as closing any 2026-07-28 request does.
      return { resumed: { cancel: () => park.waiting === waiting && end(park, "The client went away") } };
    },

    /** Calls waiting for input now. */
    size: () => byGlobal.size,

    /** Ends every parked call (the gateway closes). */
    endAll(why: string) {
      for (const park of [...byGlobal.values()]) end(park, why);
    },
  };
}
export type ParkedCalls = ReturnType<typeof createParkedCalls>;
