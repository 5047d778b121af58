import { createTtlCache } from "../cache/ttl-cache";
import type { UserRepository } from "./repository";
import { TOKEN_CACHE_MS } from "./repository";

/**
 * The administrators' per-user rate limits (docs/behaviour.md "Rate limits") as the MCP proxy reads them on every
 * request: remembered for as long as a token's owner (another replica's change is seen within it; this process's own
 * at once, `forget`), and read without a promise on a hit, so the proxy's check stays synchronous on SQLite.
 */
export function createRateOverrides(users: Pick<UserRepository, "findById">, clock: () => number) {
  const cache = createTtlCache<{ perMinute: number | null }>(TOKEN_CACHE_MS, 10_000, clock);
  const load = async (id: string) => ({ perMinute: (await users.findById(id))?.requests_per_minute ?? null });
  return {
    /** The user's own limit, null: the default (RATE__USER_REQUESTS_PER_MINUTE). */
    of(userId: string): number | null | Promise<number | null> {
      const hit = cache.get(userId);
      if (hit) return hit.perMinute;
      return cache.readThrough(userId, () => load(userId)).then((value) => value?.perMinute ?? null);
    },
    /** After this process changed the user's limit. */
    forget: (userId: string) => cache.delete(userId),
  };
}
export type RateOverrides = ReturnType<typeof createRateOverrides>;
