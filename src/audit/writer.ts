import type { Logger } from "../observability/logger";
import type { AuditRepository, AuditRow } from "./repository";

/**
 * How often queued records are written, and how many at most in one transaction. Small and often: a record then dies
 * young (no old-generation garbage) and SQLite's synchronous write pauses the event loop for ~1.5 ms at most, where
 * 250 ms and 2,000 rows cost 3 µs more CPU per request and doubled the proxy's p99 at concurrency 1 (bench/RESULTS.md).
 */
export const AUDIT_FLUSH_MS = 50;
export const AUDIT_BATCH = 500;
/**
 * Records kept in memory while the store refuses them; beyond this the oldest are dropped, a batch at a time (and
 * counted in the log).
 */
export const AUDIT_QUEUE_MAX = 200_000;

/**
 * Writes audit records off the request path: a request only queues its record; a timer writes what is queued in
 * batches, one transaction each. A batch the store refuses stays queued and is tried again.
 */
export function createAuditWriter(repository: AuditRepository, log: Logger) {
  let queue: AuditRow[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let dropped = 0;

  /** Writes what is queued; one flush at a time (a second caller waits for it, then writes what is left). */
  let flushing: Promise<void> | undefined;
  function flush(): Promise<void> {
    flushing ??= (async () => {
      try {
        await writeQueued();
      } finally {
        flushing = undefined;
      }
    })();
    return flushing.then(() => (queue.length > 0 && !timer ? flush() : undefined));
  }

  async function writeQueued(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, AUDIT_BATCH);
      try {
        await repository.insertMany(batch);
      } catch (e) {
        log.warn("audit records could not be written yet; they stay queued", {
          count: queue.length,
          error: (e as Error).message,
        });
        schedule(AUDIT_FLUSH_MS * 4);
        return;
      }
      // Only this flush takes from the front; what was pushed meanwhile is behind the batch.
      queue = queue.slice(batch.length);
      // SQLite writes synchronously: requests waiting meanwhile go first before the next batch.
      if (queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  function schedule(ms = AUDIT_FLUSH_MS) {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, ms);
    timer.unref?.();
  }

  return {
    push(row: AuditRow) {
      queue.push(row);
      if (queue.length > AUDIT_QUEUE_MAX) {
        // A batch's worth at once: dropping one a push copied the whole queue on every request (~1 ms each at the
        // limit, found by bench/in-process.ts), the moment the store is already failing.
        const over = queue.length - AUDIT_QUEUE_MAX + AUDIT_BATCH;
        queue = queue.slice(over);
        dropped += over;
        log.error("audit records dropped: the store has refused them for too long", { dropped });
      }
      schedule();
    },
    /** Writes everything queued now (at shutdown, and for tests). */
    flush,
    pending: () => queue.length,
  };
}
export type AuditWriter = ReturnType<typeof createAuditWriter>;
