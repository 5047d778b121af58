/**
 * A benchmark's child processes, their settings and its end: every child is tracked until it exits, and all are
 * stopped when the benchmark ends — after its main, after an error, or on Ctrl-C — with SIGTERM, then SIGKILL for any
 * still running after `graceMs`. No benchmark leaves a server behind.
 */
export function benchChildren(graceMs = 10_000) {
  const running = new Set<Bun.Subprocess>();
  return {
    /** Tracks `proc` until it exits (stopped by `stopAll` if it has not). */
    track<P extends Bun.Subprocess>(proc: P): P {
      running.add(proc);
      void proc.exited.then(() => running.delete(proc));
      return proc;
    },
    async stopAll(): Promise<void> {
      const left = [...running];
      for (const child of left) child.kill("SIGTERM");
      const stopped = Promise.all(left.map((c) => c.exited));
      if ((await Promise.race([stopped.then(() => true), Bun.sleep(graceMs).then(() => false)])) === false) {
        for (const child of left) child.kill("SIGKILL");
        await stopped;
      }
    },
  };
}

/**
 * Runs a benchmark's `main`, then `cleanup` (stop the children, remove the scratch files), and exits: 0, 1 after an
 * error (printed), 130 on SIGINT or SIGTERM (cleanup runs once).
 */
export async function runBench(main: () => Promise<void>, cleanup: () => Promise<void>): Promise<never> {
  let interrupted = false;
  const stop = () => {
    if (interrupted) return;
    interrupted = true;
    void cleanup().then(() => process.exit(130));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  let code = 0;
  try {
    await main();
  } catch (e) {
    console.error(e);
    code = 1;
  } finally {
    await cleanup();
  }
  process.exit(code);
}

/** `SETTING=value,SETTING=value` (a benchmark's option) as environment variables for a child (a value may hold `=`). */
export const settingsFrom = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split(",")
      .filter(Boolean)
      .map((pair) => pair.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
