import type { Store } from "../db/store";
import type { Buckets, Limit, Refusal } from "./limits";
import { createLocalBuckets } from "./local";
import { createBucketRepository } from "./repository";
import { createSharedBuckets } from "./shared";

export type RateLimiter = {
  /** Takes one request's tokens from every bucket in `limits`, or none and says which bucket refused. */
  take(limits: readonly Limit[]): Refusal | undefined | Promise<Refusal | undefined>;
  /** Forgets full buckets (memory, and the store's rows on PostgreSQL): a scheduler job (scheduler/scheduler.ts `Job`). */
  job: { name: string; run(): void | Promise<void> };
};

/**
 * The buckets for this store: in memory on SQLite (one process: no round trip per request), shared through the store
 * on PostgreSQL, where replicas serve the same users and connectors (docs/behaviour.md "Rate limits").
 */
export function createRateLimiter({ store, clock }: { store: Store; clock: () => number }): RateLimiter {
  const buckets: Buckets =
    store.dialect === "postgres" ? createSharedBuckets(createBucketRepository(store)) : createLocalBuckets();
  return {
    take: (limits) => buckets.take(limits, clock()),
    job: { name: "rate-buckets", run: () => buckets.sweep(clock()) },
  };
}
