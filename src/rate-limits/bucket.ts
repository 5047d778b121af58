/**
 * A token bucket as one number (the generic cell rate algorithm, GCRA): `tat`, the time at which the bucket is full
 * again. A limit of `perMinute` requests refills one token every 60 000 / perMinute ms and holds a minute's worth, so
 * a full bucket lets a burst of `perMinute` through at once — "600 a minute" means 600 in any minute. Pure: the
 * local buckets (local.ts) and the shared store's row (repository.ts) do the same arithmetic.
 */

/** What a full bucket holds, in time: a minute's worth of tokens whatever the rate. */
export const BURST_MS = 60_000;

/** Floating-point slack: 7 a minute refills every 8571.428… ms, and sums of it drift by far less than this. */
const EPSILON_MS = 1e-6;

export const intervalMs = (perMinute: number) => BURST_MS / perMinute;

/** Whole tokens in the bucket now. */
export function available(tat: number, now: number, perMinute: number): number {
  return Math.floor((now + BURST_MS - Math.max(tat, now) + EPSILON_MS) / intervalMs(perMinute));
}

/** Milliseconds until `count` tokens are there; 0: now. */
export function waitMs(tat: number, now: number, perMinute: number, count = 1): number {
  const wait = Math.max(tat, now) + count * intervalMs(perMinute) - BURST_MS - now;
  return wait > EPSILON_MS ? wait : 0;
}

/** The bucket after `count` tokens were taken (check `waitMs` first). */
export function taken(tat: number, now: number, perMinute: number, count = 1): number {
  return Math.max(tat, now) + count * intervalMs(perMinute);
}
