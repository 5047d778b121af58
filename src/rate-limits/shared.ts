import { intervalMs } from "./bucket";
import type { Buckets, Limit, Refusal } from "./limits";
import type { BucketRepository } from "./repository";

/**
 * Tokens a replica takes from the store at once: a fiftieth of the limit. Amortises the round trip (600 a minute:
 * one per 12 requests) while what replicas hold unused stays small — after a burst, at most batch − 1 each, so three
 * replicas leave under 6 % of a full bucket idle, and a replica's reserve spent later lets at most 2 % more through
 * (test/rate-limits/replicas.test.ts holds three replicas to ±10 %). Small limits reserve one token at a time. (A
 * reservation made for requests waiting together is larger, one per request; what another bucket then refused stays
 * reserved for the next ones.)
 */
export const batchOf = (perMinute: number) => Math.max(1, Math.floor(perMinute / 50));

/** A bucket as this replica holds it: tokens reserved from the store and not used yet, or known empty until a time. */
type Held = {
  tokens: number;
  emptyUntil: number;
  perMinute: number;
  /** Requests of this replica waiting for the store's tokens: the next reservation asks for as many. */
  waiting: number;
  reserving: Promise<void> | undefined;
};

/** Reservations a request waits for before it gives up (others kept taking what was reserved for it). */
const MAX_ROUNDS = 4;

/**
 * Buckets shared by replicas on one PostgreSQL store: each replica reserves batches of tokens from the bucket's row
 * (repository.ts) and spends them locally, so most requests cost no round trip. A bucket the store found empty is
 * refused locally until it refills. One reservation per bucket at a time, sized to the requests waiting for it, so a
 * burst of concurrent requests costs a round trip or two, not one per batch.
 */
export function createSharedBuckets(repository: BucketRepository): Buckets {
  const held = new Map<string, Held>();
  const heldOf = (limit: Limit) => {
    let bucket = held.get(limit.key);
    if (!bucket)
      held.set(limit.key, (bucket = { tokens: 0, emptyUntil: 0, perMinute: limit.perMinute, waiting: 0, reserving: undefined }));
    // A new rate (the owner or an administrator changed it): when the store's bucket refills is to be asked again.
    else if (bucket.perMinute !== limit.perMinute) [bucket.perMinute, bucket.emptyUntil] = [limit.perMinute, 0];
    return bucket;
  };
  const reserve = (limit: Limit, now: number) => {
    const bucket = heldOf(limit);
    return (bucket.reserving ??= repository
      .reserve(limit.key, Math.max(batchOf(limit.perMinute), limit.count, bucket.waiting), now, limit.perMinute)
      .then((reserved) => {
        bucket.tokens += reserved.granted;
        if (reserved.granted === 0) bucket.emptyUntil = now + reserved.waitMs;
      })
      .finally(() => (bucket.reserving = undefined)));
  };

  /** Taken (undefined), refused, or the buckets whose tokens must come from the store first. */
  function attempt(limits: readonly Limit[], now: number): Refusal | undefined | Limit[] {
    let refusal: Refusal | undefined;
    let short: Limit[] | undefined;
    for (const limit of limits) {
      const bucket = heldOf(limit);
      if (bucket.tokens >= limit.count) continue;
      if (bucket.emptyUntil > now) {
        const wait = bucket.emptyUntil - now;
        if (wait > (refusal?.waitMs ?? 0)) refusal = { limit, waitMs: wait };
      } else (short ??= []).push(limit);
    }
    if (refusal) return refusal;
    if (short) return short;
    for (const limit of limits) heldOf(limit).tokens -= limit.count;
    return undefined;
  }

  async function afterReserving(limits: readonly Limit[], now: number, short: Limit[]): Promise<Refusal | undefined> {
    const buckets = limits.map(heldOf);
    for (const bucket of buckets) bucket.waiting++;
    try {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        await Promise.all(short.map((limit) => reserve(limit, now)));
        const next = attempt(limits, now);
        if (!Array.isArray(next)) return next;
        short = next;
      }
      return { limit: short[0]!, waitMs: intervalMs(short[0]!.perMinute) };
    } finally {
      for (const bucket of buckets) bucket.waiting--;
    }
  }

  return {
    take(limits, now) {
      const first = attempt(limits, now);
      return Array.isArray(first) ? afterReserving(limits, now, first) : first;
    },
    async sweep(now: number) {
      for (const [key, bucket] of held)
        if (bucket.tokens === 0 && bucket.emptyUntil <= now && bucket.waiting === 0 && !bucket.reserving) held.delete(key);
      // A row full for a minute past is the same as none.
      await repository.sweep(now - 60_000);
    },
  };
}
