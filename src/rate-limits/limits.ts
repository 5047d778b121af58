/** Who set a limit: it names itself to the agent that hit it. */
export type LimitScope = "user" | "connector" | "tool";

/** One bucket a request takes from: its key in the store, its rate, and what it is, for the refusal. */
export type Limit = {
  key: string;
  perMinute: number;
  scope: LimitScope;
  /** The tool's name (scope "tool"). */
  tool?: string;
  /** Tokens this request takes (a batch takes one per call of a limited tool). */
  count: number;
  /** Who set it, as the refusal names it: "the connector's owner", "RATE__USER_REQUESTS_PER_MINUTE" … */
  setBy: string;
};

/** Why a request was refused: the bucket that was empty, and how long until it has the tokens again. */
export type Refusal = { limit: Limit; waitMs: number };

/**
 * Buckets, taken from all together or not at all: a request refused by one bucket takes nothing from the others
 * (else a tool's limit would use up the connector's and the caller's tokens on requests that never went out).
 * Synchronous unless the store must be asked (shared.ts).
 */
export type Buckets = {
  take(limits: readonly Limit[], now: number): Refusal | undefined | Promise<Refusal | undefined>;
  /** Forgets buckets that are full again (they are the same as none). */
  sweep(now: number): void | Promise<void>;
};

/** Whole seconds to wait, as `Retry-After` says them (RFC 9110 §10.2.3: a non-negative integer): at least 1. */
export const retryAfterSeconds = (refusal: Refusal) => Math.max(1, Math.ceil(refusal.waitMs / 1000));
