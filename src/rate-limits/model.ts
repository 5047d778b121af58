import { t } from "elysia";

/** The highest rate any limit may name: past it, a limit no longer limits anything a proxy of one process can serve. */
export const MAX_PER_MINUTE = 1_000_000;
/** Tools one connector may limit one by one. */
export const MAX_LIMITED_TOOLS = 1000;

export const PerMinute = (description: string) =>
  t.Integer({
    minimum: 1,
    maximum: MAX_PER_MINUTE,
    description: `${description}: 1 to ${MAX_PER_MINUTE}`,
    // Said in words: TypeBox's own message for this type is "Expected union value" (Elysia's integer also takes a string).
    error: `must be a whole number from 1 to ${MAX_PER_MINUTE}`,
  });

/**
 * A connector's rate limits, set by its owner (docs/behaviour.md "Rate limits"): token buckets on the MCP requests
 * sent to its proxy URL, and on the calls of single tools. They only tighten: every request also takes from its
 * caller's own bucket (RATE__USER_REQUESTS_PER_MINUTE or the administrators' override), the ceiling.
 */
export const RateLimits = t.Object(
  {
    requests_per_minute: t.Optional(PerMinute("MCP requests per minute to this connector, from all its callers together")),
    tools: t.Optional(
      t.Record(
        // A key's length is checked by its pattern: a Record's patternProperties drop minLength and maxLength.
        t.String({ pattern: "^[\\s\\S]{1,256}$" }),
        PerMinute("Calls per minute of this tool (by the name clients call it)"),
        {
          additionalProperties: false,
          maxProperties: MAX_LIMITED_TOOLS,
          description: "A tool's name, as clients call it (after a tool policy's rename) → its calls per minute",
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    title: "RateLimits",
    examples: [{ requests_per_minute: 600, tools: { send_email: 10 } }],
  },
);
export type RateLimits = typeof RateLimits.static;

/** A user's own ceiling, set by an administrator; null: the default (RATE__USER_REQUESTS_PER_MINUTE). */
export const UserRateLimits = t.Object(
  { requests_per_minute: PerMinute("MCP requests per minute this user may send through the proxy, to all connectors") },
  { additionalProperties: false, title: "UserRateLimits" },
);
export type UserRateLimits = typeof UserRateLimits.static;
