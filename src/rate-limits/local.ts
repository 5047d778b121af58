import { taken, waitMs } from "./bucket";
import type { Buckets, Limit, Refusal } from "./limits";

/**
 * Buckets in this process's memory: for SQLite, where one process serves the store (docs/deployment.md), so no
 * other replica can take tokens. A map lookup and some arithmetic per bucket; no store round trip.
 */
export function createLocalBuckets(): Buckets {
  const tats = new Map<string, number>();
  return {
    take(limits: readonly Limit[], now: number): Refusal | undefined {
      let refusal: Refusal | undefined;
      for (const limit of limits) {
        const wait = waitMs(tats.get(limit.key) ?? now, now, limit.perMinute, limit.count);
        if (wait > (refusal?.waitMs ?? 0)) refusal = { limit, waitMs: wait };
      }
      if (refusal) return refusal;
      for (const limit of limits) tats.set(limit.key, taken(tats.get(limit.key) ?? now, now, limit.perMinute, limit.count));
      return undefined;
    },
    sweep(now: number): void {
      for (const [key, tat] of tats) if (tat <= now) tats.delete(key);
    },
  };
}
