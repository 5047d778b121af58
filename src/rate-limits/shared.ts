import type { Buckets, Limit, Refusal } from "./limits";
import type { BucketRepository } from "./repository";

/**
 * Tokens a replica takes from the store at once: a fiftieth of the limit. Amortises the round trip (600 a minute:
 * one per 12 requests) while what replicas hold unused stays small — at most batch − 1 each, so three replicas leave
 * under 6 % of a full bucket idle, and a replica's reserve spent later lets at most 2 % more through
 * (test/rate-limits/replicas.test.ts holds three replicas to ±10 %). Small limits reserve one token at a time.
 */
export const batchOf = (perMinute: number) => Math.max(1, Math.floor(perMinute / 50));

/** A bucket as this replica holds it: tokens reserved from the store and not used yet, or known empty until a time. */
type Held = { tokens: number; emptyUntil: number; perMinute: number; reserving: Promise<void> | undefined };

/** How often a request goes back to the store when others keep taking the tokens it reserved for it. */
const MAX_ROUNDS = 3;

/**
 * Buckets shared by replicas on one PostgreSQL store: each replica reserves batches of tokens from the bucket's row
 * (repository.ts) and spends them locally, so most requests cost no round trip. A bucket the store found empty is
 * refused locally until it refills. One reservation per bucket at a time: concurrent requests wait for the same one.
 */
export function createSharedBuckets(repository: BucketRepository): Buckets {
  const held = new Map<string, Held>();
  const heldOf = (limit: Limit) => {
    let bucket = held.get(limit.key);
    if (!bucket) held.set(limit.key, (bucket = { tokens: 0, emptyUntil: 0, perMinute: limit.perMinute, reserving: undefined }));
    // A new rate (the owner or an administrator changed it): when the store's bucket refills is to be asked again.
    else if (bucket.perMinute !== limit.perMinute) [bucket.perMinute, bucket.emptyUntil] = [limit.perMinute, 0];
    return bucket;
  };
  const reserve = (limit: Limit, bucket: Held, now: number) =>
    (bucket.reserving ??= repository
      .reserve(limit.key, Math.max(batchOf(limit.perMinute), limit.count), now, limit.perMinute)
      .then((reserved) => {
        bucket.tokens += reserved.granted;
        if (reserved.granted === 0) bucket.emptyUntil = now + reserved.waitMs;
      })
      .finally(() => (bucket.reserving = undefined)));

  function take(limits: readonly Limit[], now: number, round: number): Refusal | undefined | Promise<Refusal | undefined> {
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
    if (short) {
      if (round >= MAX_ROUNDS) return { limit: short[0]!, waitMs: 1000 };
      return Promise.all(short.map((limit) => reserve(limit, heldOf(limit), now))).then(() => take(limits, now, round + 1));
    }
    for (const limit of limits) heldOf(limit).tokens -= limit.count;
    return undefined;
  }

  return {
    take: (limits, now) => take(limits, now, 0),
    async sweep(now: number) {
      for (const [key, bucket] of held)
        if (bucket.tokens === 0 && bucket.emptyUntil <= now && !bucket.reserving) held.delete(key);
      // A row full for a minute past is the same as none.
      await repository.sweep(now - 60_000);
    },
  };
}
