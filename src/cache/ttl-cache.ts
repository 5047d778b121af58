/**
 * A bounded map whose entries expire. The repositories keep hot rows here for a second so the MCP proxy
 * does not query the store on every request; their own writes update or drop the entry, so this process never
 * reads its own stale data, and another process sharing the database is seen within `ttlMs`.
 */
export type TtlCache<V> = {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  delete(key: string): void;
  clear(): void;
  /**
   * The cached value, else `load()`'s, remembered when there is one (misses are not cached) and when no write of
   * this cache happened while it loaded (the load may have read what that write replaced).
   */
  readThrough(key: string, load: () => Promise<V | undefined>): Promise<V | undefined>;
};

export function createTtlCache<V>(ttlMs: number, max: number, clock: () => number = Date.now): TtlCache<V> {
  const entries = new Map<string, { value: V; until: number }>();
  let writes = 0;
  const cache: TtlCache<V> = {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.until > clock()) return entry.value;
      entries.delete(key);
      return undefined;
    },
    set(key, value) {
      writes++;
      if (entries.size >= max && !entries.has(key)) entries.delete(entries.keys().next().value!);
      entries.set(key, { value, until: clock() + ttlMs });
    },
    delete(key) {
      writes++;
      entries.delete(key);
    },
    clear() {
      writes++;
      entries.clear();
    },
    async readThrough(key, load) {
      const cached = cache.get(key);
      if (cached !== undefined) return cached;
      const before = writes;
      const value = await load();
      if (value !== undefined && writes === before) cache.set(key, value);
      return value;
    },
  };
  return cache;
}
