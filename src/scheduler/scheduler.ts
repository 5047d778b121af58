import type { Logger } from "../observability/logger";

/** Work the scheduler does on every tick; each feature defines its own (docs/development.md "Layout": where a rule lives). */
export type Job = {
  name: string;
  run(): Promise<void> | void;
  /** It acts outside the store (a runtime, the network): replicas take turns, one at a time, under a lease (leases.ts). */
  onOneReplica?: boolean;
};

export type Scheduler = { running(): boolean; stop(): Promise<void> };

/**
 * One in-process loop: every `intervalMs` (± 20 % jitter, so processes sharing a database drift
 * apart) it runs each job in turn. A job that throws is logged and the loop goes on.
 */
export function startScheduler(jobs: Job[], log: Logger, intervalMs = 5_000): Scheduler {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<void> = Promise.resolve();
  let stopped = false;

  const tick = async () => {
    for (const job of jobs) {
      if (stopped) return;
      try {
        await job.run();
      } catch (e) {
        log.error("scheduled job failed", { job: job.name, error: (e as Error).message });
      }
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        current = tick().finally(schedule);
      },
      intervalMs * (0.8 + Math.random() * 0.4),
    );
  };
  schedule();

  return {
    running: () => !stopped,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
