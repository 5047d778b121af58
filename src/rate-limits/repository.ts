import { and, eq, lt, sql } from "drizzle-orm";
import type { Store } from "../db/store";
import { available, BURST_MS, intervalMs, waitMs } from "./bucket";
import { rate_buckets as sqliteBuckets, rate_bucketsPg } from "./table";

/** What the store granted: `granted` tokens (up to the count asked), or none and how long until there is one. */
export type Reserved = { granted: number; waitMs: number };

export type BucketRepository = {
  /** Takes up to `count` tokens from the bucket `key` at once (whatever other replicas take meanwhile). */
  reserve(key: string, count: number, now: number, perMinute: number): Promise<Reserved>;
  /** Deletes the rows of buckets full since before `before`: a missing row is a full bucket. */
  sweep(before: number): Promise<number>;
};

export function createBucketRepository(store: Store): BucketRepository {
  const { db } = store;
  const buckets = store.table(sqliteBuckets, rate_bucketsPg);
  // The bucket's level as of now: a tat in the past is a full bucket (bucket.ts).
  const from = (now: number) => sql`CASE WHEN ${buckets.tat} > ${now} THEN ${buckets.tat} ELSE ${now} END`;

  /** One statement, so concurrent replicas serialise on the row: takes `count` when they all fit, else nothing. */
  async function takeIfFits(key: string, count: number, now: number, perMinute: number): Promise<boolean> {
    const step = count * intervalMs(perMinute);
    const rows = await db
      .update(buckets)
      .set({ tat: sql`${from(now)} + ${step}` })
      .where(and(eq(buckets.key, key), sql`${from(now)} + ${step} <= ${now + BURST_MS}`))
      .returning({ tat: buckets.tat });
    return rows.length === 1;
  }

  return {
    async reserve(key, count, now, perMinute) {
      // The usual case is one round trip; the others happen at the edges (a new bucket, one nearly empty), and each
      // conditional write is atomic, so a race costs a retry, never a token taken twice.
      for (let attempt = 0; attempt < 3; attempt++) {
        if (await takeIfFits(key, count, now, perMinute)) return { granted: count, waitMs: 0 };
        const [row] = await db.select({ tat: buckets.tat }).from(buckets).where(eq(buckets.key, key));
        if (!row) {
          const inserted = await db
            .insert(buckets)
            .values({ key, tat: now + count * intervalMs(perMinute) })
            .onConflictDoNothing()
            .returning({ key: buckets.key });
          if (inserted.length === 1) return { granted: count, waitMs: 0 };
          continue;
        }
        const left = Math.min(count, available(row.tat, now, perMinute));
        if (left < 1) return { granted: 0, waitMs: waitMs(row.tat, now, perMinute) };
        if (await takeIfFits(key, left, now, perMinute)) return { granted: left, waitMs: 0 };
      }
      // Three races lost in a row: others are taking this bucket's tokens as they come; one interval's wait.
      return { granted: 0, waitMs: intervalMs(perMinute) };
    },
    async sweep(before) {
      const gone = await db.delete(buckets).where(lt(buckets.tat, before)).returning({ key: buckets.key });
      return gone.length;
    },
  };
}
