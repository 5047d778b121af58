import { describe, expect, test } from "bun:test";
import { available, taken, waitMs } from "../../src/rate-limits/bucket";
import type { Limit, Refusal } from "../../src/rate-limits/limits";
import { createLocalBuckets } from "../../src/rate-limits/local";
import type { BucketRepository } from "../../src/rate-limits/repository";
import { batchOf, createSharedBuckets } from "../../src/rate-limits/shared";

// The buckets' pure parts: the arithmetic, all-or-none across buckets, and the shared buckets' batching against a
// repository that counts its round trips.
const limit = (key: string, perMinute: number, count = 1): Limit => ({
  key,
  perMinute,
  count,
  scope: "connector",
  setBy: "the test",
});

describe("one bucket (GCRA)", () => {
  test("a full bucket holds a minute's worth; it refills one token per interval, never past full", () => {
    let tat = 0;
    const now = 1_000_000;
    expect(available(tat, now, 600)).toBe(600);
    for (let i = 0; i < 600; i++) {
      expect(waitMs(tat, now, 600)).toBe(0);
      tat = taken(tat, now, 600);
    }
    expect(available(tat, now, 600)).toBe(0);
    expect(waitMs(tat, now, 600)).toBeCloseTo(100);
    expect(available(tat, now + 100, 600)).toBe(1);
    expect(available(tat, now + 3_600_000, 600)).toBe(600);
  });

  test("an interval that is no whole number of milliseconds does not drift", () => {
    let tat = 0;
    let now = 0;
    let through = 0;
    // 7 a minute for ten minutes, asked every millisecond-ish: 7 at once, then 7 × 10 more.
    for (; now <= 600_000 + 97; now += 97) {
      if (waitMs(tat, now, 7) === 0) {
        tat = taken(tat, now, 7);
        through++;
      }
    }
    expect(through).toBe(7 + 70);
  });
});

describe("local buckets", () => {
  test("a request takes from every bucket or from none; the refusal names the bucket with the longest wait", () => {
    const buckets = createLocalBuckets();
    const wide = limit("c:1", 60);
    const narrow = limit("t:1:x", 1);
    expect(buckets.take([wide, narrow], 0)).toBeUndefined();
    const refusal = buckets.take([wide, narrow], 0);
    expect(refusal).toEqual({ limit: narrow, waitMs: 60_000 });
    // The refused request took nothing from the wide bucket: 59 more fit.
    for (let i = 0; i < 59; i++) expect(buckets.take([wide], 0)).toBeUndefined();
    expect((buckets.take([wide], 0) as Refusal).waitMs).toBe(1000);
    buckets.sweep(120_000);
    expect(buckets.take([narrow], 120_000)).toBeUndefined();
  });
});

describe("shared buckets", () => {
  /** The store's bucket, in memory, with the repository's contract: grants up to `count`, or the wait. */
  function countingRepository() {
    const tats = new Map<string, number>();
    const repository: BucketRepository & { trips: number } = {
      trips: 0,
      async reserve(key, count, now, perMinute) {
        repository.trips++;
        const tat = tats.get(key) ?? now;
        const granted = Math.min(count, available(tat, now, perMinute));
        if (granted < 1) return { granted: 0, waitMs: waitMs(tat, now, perMinute) };
        tats.set(key, taken(tat, now, perMinute, granted));
        return { granted, waitMs: 0 };
      },
      sweep: async () => 0,
    };
    return repository;
  }

  test("a replica reserves a fiftieth of the limit at a time, and refuses locally once the store says empty", async () => {
    const repository = countingRepository();
    const buckets = createSharedBuckets(repository);
    const l = limit("c:1", 600);
    expect(batchOf(600)).toBe(12);
    let through = 0;
    for (let i = 0; i < 700; i++) if ((await buckets.take([l], 0)) === undefined) through++;
    expect(through).toBe(600);
    // 600 / 12 reservations, and one that found the bucket empty; the other 99 refusals cost no round trip.
    expect(repository.trips).toBe(51);
    const refusal = await buckets.take([l], 50);
    expect(refusal?.waitMs).toBeCloseTo(50);
    expect(repository.trips).toBe(51);
    expect(await buckets.take([l], 100)).toBeUndefined();
  });

  test("three replicas on one store let the limit through, and concurrent requests share a reservation", async () => {
    const repository = countingRepository();
    const replicas = [0, 1, 2].map(() => createSharedBuckets(repository));
    const l = limit("t:1:send_email", 120);
    const outcomes = await Promise.all(Array.from({ length: 360 }, (_, i) => replicas[i % 3]!.take([l], 0)));
    const through = outcomes.filter((o) => o === undefined).length;
    expect(through).toBeGreaterThanOrEqual(120 - 3 * (batchOf(120) - 1));
    expect(through).toBeLessThanOrEqual(120);
    // A few round trips per replica, not one per request (or per batch of 2).
    expect(repository.trips).toBeLessThanOrEqual(12);
  });

  test("a changed rate asks the store again instead of trusting the old wait", async () => {
    const repository = countingRepository();
    const buckets = createSharedBuckets(repository);
    expect(await buckets.take([limit("u:1", 1)], 0)).toBeUndefined();
    expect((await buckets.take([limit("u:1", 1)], 0))?.waitMs).toBe(60_000);
    // At 60 a minute the debt of one token at 1 a minute (60 s) is paid in 1 s.
    expect(await buckets.take([limit("u:1", 60)], 1_000)).toBeUndefined();
  });
});
