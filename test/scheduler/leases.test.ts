import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Store } from "../../src/db/store";
import { createJobLeases, JOB_LEASE_MS, leased } from "../../src/scheduler/leases";
import { openTestStore } from "../support/store";

// Job leases on the suite's store (SQLite, or PostgreSQL in the second run): two owners stand for two replicas.
let store: Store;
beforeAll(async () => {
  store = await openTestStore();
});
afterAll(() => store.close());

test("one owner at a time; a lease that ran out is taken over; only its owner gives it back", async () => {
  const leases = createJobLeases(store);
  expect(await leases.take("job", "a", 0, JOB_LEASE_MS)).toBe(true);
  expect(await leases.take("job", "b", 1_000, 1_000 + JOB_LEASE_MS)).toBe(false);
  expect(await leases.take("job", "a", 2_000, 2_000 + JOB_LEASE_MS)).toBe(true); // its own: extended
  await leases.release("job", "b"); // not b's: nothing happens
  expect(await leases.take("job", "b", 3_000, 3_000 + JOB_LEASE_MS)).toBe(false);
  // a was killed: once its lease runs out, b takes over.
  expect(await leases.take("job", "b", 2_000 + JOB_LEASE_MS + 1, 2_000 + 2 * JOB_LEASE_MS)).toBe(true);
  await leases.release("job", "b");
  expect(await leases.take("job", "a", 2_000 + JOB_LEASE_MS + 2, 3_000 + 2 * JOB_LEASE_MS)).toBe(true);
});

test("a leased job ticking on three replicas at once runs on one of them", async () => {
  const leases = createJobLeases(store);
  let runs = 0;
  let release!: () => void;
  const running = new Promise<void>((resolve) => (release = resolve));
  const job = { name: "shared-job", run: async () => void (runs++, await running) };
  const replicas = ["r1", "r2", "r3"].map((owner) => leased(job, { leases, owner, clock: () => 10_000 }));
  const ticks = replicas.map((replica) => replica.run());
  await Bun.sleep(50);
  release();
  await Promise.all(ticks);
  expect(runs).toBe(1);
  // Given back at the end: the next tick runs it again, wherever.
  await replicas[1]!.run();
  expect(runs).toBe(2);
});
