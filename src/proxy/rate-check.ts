import type { ConnectorRow } from "../connectors/repository";
import { RateLimited } from "../http-errors/errors";
import type { Counter } from "../metrics/registry";
import { retryAfterSeconds, type Limit, type Refusal } from "../rate-limits/limits";
import type { RateLimiter } from "../rate-limits/service";
import type { Principal } from "../users/model";
import { rpcResult, type RpcMessage } from "./message";

export type RateCheckDeps = {
  limiter: RateLimiter;
  /** RATE__USER_REQUESTS_PER_MINUTE: every user's ceiling unless an administrator set theirs; undefined: none. */
  userDefault: number | undefined;
  /** An administrator's limit for the user, null: none (users/rate-overrides.ts: remembered, no promise on a hit). */
  userOverride: (userId: string) => number | null | Promise<number | null>;
  /** mcp_rate_limited_total{limit}: refusals by the bucket that refused. */
  refused: Counter;
};

/** An unread body's message, read only to tell a refused `tools/call` from other requests. */
export type Peek = () => RpcMessage | RpcMessage[] | undefined;

/** A request the limits refused: the tool result or the problem the client gets instead, and why. */
export type RateRefusal = { refusal: Refusal; response: Response };

/** The tools a message calls, each with how many times (a batch may call one more than once). */
function callsOf(message: RpcMessage | RpcMessage[] | undefined): Map<string, number> | undefined {
  if (message === undefined) return undefined;
  let calls: Map<string, number> | undefined;
  for (const m of Array.isArray(message) ? message : [message]) {
    const name = m.method === "tools/call" ? (m.params as { name?: unknown } | undefined)?.name : undefined;
    if (typeof name === "string") (calls ??= new Map()).set(name, (calls.get(name) ?? 0) + 1);
  }
  return calls;
}

/** The wording of a refusal: what the limit is, who set it, how long to wait. */
export function describeRefusal(refusal: Refusal): string {
  const { limit } = refusal;
  const wait = retryAfterSeconds(refusal);
  const what =
    limit.scope === "tool"
      ? `the tool ${limit.tool} may be called ${limit.perMinute} time${limit.perMinute === 1 ? "" : "s"} a minute through this connector`
      : limit.scope === "connector"
        ? `this connector takes ${limit.perMinute} MCP requests a minute`
        : `you may send ${limit.perMinute} MCP requests a minute through this service`;
  return `Rate limit reached: ${what} (set by ${limit.setBy}). Try again in ${wait} second${wait === 1 ? "" : "s"}.`;
}

/**
 * The proxy's rate limits (docs/behaviour.md "Rate limits"): the caller's bucket (the administrators' ceiling), the
 * connector's, and one per limited tool the message calls, taken from together or not at all (rate-limits/limits.ts).
 * A refused `tools/call` is answered as a tool result with `isError: true` — the agent's model reads it and can wait
 * ([MCP 2025-11-25 tools §Error handling](https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling):
 * errors a model can act on belong in the result, protocol errors in JSON-RPC errors) — and the session goes on;
 * anything else gets a 429 `rate-limited` problem with `Retry-After` (RFC 6585 §4).
 */
export function createRateCheck(deps: RateCheckDeps) {
  const { limiter, userDefault } = deps;

  function limitsOf(
    caller: Principal,
    row: ConnectorRow,
    message: RpcMessage | RpcMessage[] | undefined,
    override: number | null,
  ) {
    const limits: Limit[] = [];
    const perUser = override ?? userDefault;
    if (perUser !== undefined) {
      const setBy = override === null ? "RATE__USER_REQUESTS_PER_MINUTE" : "an administrator, for you";
      limits.push({ key: `u:${caller.id}`, perMinute: perUser, scope: "user", count: 1, setBy });
    }
    const own = row.rate_limits;
    if (own?.requests_per_minute !== undefined)
      limits.push({
        key: `c:${row.id}`,
        perMinute: own.requests_per_minute,
        scope: "connector",
        count: 1,
        setBy: "the connector's owner",
      });
    const tools = own?.tools;
    if (tools) {
      for (const [tool, count] of callsOf(message) ?? []) {
        // Own properties only: a tool named "constructor" is not Object.prototype's.
        if (!Object.hasOwn(tools, tool)) continue;
        limits.push({
          key: `t:${row.id}:${tool}`,
          perMinute: tools[tool]!,
          scope: "tool",
          tool,
          count,
          setBy: "the connector's owner",
        });
      }
    }
    return limits;
  }

  function answer(refusal: Refusal, read: RpcMessage | RpcMessage[] | undefined, peek: Peek): RateRefusal {
    deps.refused.inc(refusal.limit.scope);
    const message = read ?? peek();
    const text = describeRefusal(refusal);
    if (message !== undefined && !Array.isArray(message) && message.method === "tools/call" && message.id !== undefined) {
      const result = { content: [{ type: "text", text }], isError: true };
      return { refusal, response: rpcResult(message.id, result) };
    }
    throw new RateLimited(text, retryAfterSeconds(refusal));
  }

  function decide(
    caller: Principal,
    row: ConnectorRow,
    message: RpcMessage | RpcMessage[] | undefined,
    peek: Peek,
    override: number | null,
  ): RateRefusal | undefined | Promise<RateRefusal | undefined> {
    const limits = limitsOf(caller, row, message, override);
    if (limits.length === 0) return undefined;
    const taken = limiter.take(limits);
    if (taken instanceof Promise) return taken.then((refusal) => refusal && answer(refusal, message, peek));
    return taken && answer(taken, message, peek);
  }

  /**
   * Takes the request's tokens, or answers it: a tool result for a refused `tools/call` (returned), a `RateLimited`
   * problem for anything else (thrown). Synchronous while the caller's limit and the buckets are at hand (SQLite: always,
   * but for a user's first request in a second).
   * `message`: as the proxy read it, if it did; `peek` reads an unread body's message only when a refusal needs it.
   */
  return function check(
    caller: Principal,
    row: ConnectorRow,
    message: RpcMessage | RpcMessage[] | undefined,
    peek: Peek,
  ): RateRefusal | undefined | Promise<RateRefusal | undefined> {
    const override = deps.userOverride(caller.id);
    if (override instanceof Promise) return override.then((perMinute) => decide(caller, row, message, peek, perMinute));
    return decide(caller, row, message, peek, override);
  };
}
export type RateCheck = ReturnType<typeof createRateCheck>;
