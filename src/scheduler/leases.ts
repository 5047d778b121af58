import { and, eq, lt, or, sql } from "drizzle-orm";
import type { Store } from "../db/store";
import type { Job } from "./scheduler";
import { job_leasesPg, job_leases as sqliteLeases } from "./table";

/**
 * How long a job's lease lasts: the most a replica killed while it runs a job delays that job for the others (it is
 * given back when the run ends).
 */
export const JOB_LEASE_MS = 60_000;

export type JobLeases = {
  /** Takes the lease on `name` until `until`, unless another owner holds one that has not run out. */
  take(name: string, owner: string, now: number, until: number): Promise<boolean>;
  /** Gives it back, if `owner` still holds it. */
  release(name: string, owner: string): Promise<void>;
};

export function createJobLeases(store: Store): JobLeases {
  const { db } = store;
  const leases = store.table(sqliteLeases, job_leasesPg);
  return {
    // One statement: an insert, or an update only where the lease is free, ran out or is ours already.
    take: async (name, owner, now, until) =>
      (
        await db
          .insert(leases)
          .values({ name, owner, until })
          .onConflictDoUpdate({
            target: leases.name,
            set: { owner, until },
            setWhere: or(lt(leases.until, now), eq(leases.owner, owner)),
          })
          .returning({ name: leases.name })
      ).length === 1,
    async release(name, owner) {
      await db
        .update(leases)
        .set({ until: sql`0` })
        .where(and(eq(leases.name, name), eq(leases.owner, owner)));
    },
  };
}

export type LeaseDeps = { leases: JobLeases; owner: string; clock: () => number };

/**
 * A job that runs on one replica at a time: each run first takes the job's lease (skipped when another replica holds
 * it) and gives it back when done.
 */
export function leased(job: Job, deps: LeaseDeps): Job {
  return {
    name: job.name,
    async run() {
      const now = deps.clock();
      if (!(await deps.leases.take(job.name, deps.owner, now, now + JOB_LEASE_MS))) return;
      try {
        await job.run();
      } finally {
        await deps.leases.release(job.name, deps.owner);
      }
    },
  };
}

/** The jobs as the scheduler runs them: those marked `onOneReplica` under their lease, the others as they are. */
export const withLeases = (jobs: Job[], deps: LeaseDeps): Job[] =>
  jobs.map((job) => (job.onOneReplica ? leased(job, deps) : job));
