import { TooManyRequests } from "../http-errors/errors";

export type ProcessLimitOptions = {
  /** RUNTIME__MAX_PROCESSES_PER_USER. */
  maxProcessesPerUser: number;
  /** RUNTIME__MAX_PROCESSES. */
  maxProcesses: number;
};

/** Gives back a place taken (once, however often it is called). */
export type Release = () => void;

/**
 * How many managed server processes the local driver runs at once, per user (the owner of the connector, whoever
 * calls it) and in all. Each MCP session of a managed connector is one process (~66 MiB for a Node server, docs/deployment.md
 * "Scale notes"), so without a cap one user's clients — or anyone's session-less POSTs — could start processes until
 * the machine gives out. Beyond a cap: 429, naming the setting.
 */
export function createProcessLimits({ maxProcessesPerUser, maxProcesses }: ProcessLimitOptions) {
  const byOwner = new Map<string, number>();
  let running = 0;
  return {
    /** Takes a place for one process of `ownerId`'s connectors, or throws TooManyRequests. */
    take(ownerId: string): Release {
      const owned = byOwner.get(ownerId) ?? 0;
      if (owned >= maxProcessesPerUser) {
        throw new TooManyRequests(
          `Your managed connectors run ${owned} server processes, the most a user may (RUNTIME__MAX_PROCESSES_PER_USER): each open MCP session is one; end sessions you no longer use (an MCP client's DELETE, or closing it) and retry`,
          5,
        );
      }
      if (running >= maxProcesses) {
        throw new TooManyRequests(
          `The service runs ${running} managed server processes, its limit (RUNTIME__MAX_PROCESSES): retry when other sessions have ended`,
          30,
        );
      }
      byOwner.set(ownerId, owned + 1);
      running++;
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        running--;
        const left = byOwner.get(ownerId)! - 1;
        if (left === 0) byOwner.delete(ownerId);
        else byOwner.set(ownerId, left);
      };
    },
    /** Processes running now: `ownerId`'s, and in all. */
    count: (ownerId: string) => ({ user: byOwner.get(ownerId) ?? 0, total: running }),
  };
}
export type ProcessLimits = ReturnType<typeof createProcessLimits>;
