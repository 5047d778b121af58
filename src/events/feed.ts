import type { ConnectorEventRow, ConnectorRepository } from "../connectors/repository";
import type { Logger } from "../observability/logger";

/** How often a process looks for events other replicas wrote (its own are seen at once: the repository kicks). */
export const EVENT_POLL_MS = 500;
/**
 * How long a hole in the event ids is waited for. PostgreSQL hands out ids when a transaction inserts, not when it
 * commits, so event 10 may become visible after event 11; a hole that stays this long was a rolled-back transaction.
 */
export const EVENT_GAP_WAIT_MS = 5_000;

export type EventListener = (event: ConnectorEventRow) => void;

export type EventFeedDeps = {
  repository: Pick<ConnectorRepository, "eventsAfter" | "eventBounds">;
  clock: () => number;
  log: Logger;
};

/**
 * One reader of the connector events table per process, fanning each event out to the listeners (the event streams,
 * the webhook dispatcher) once and in id order. It polls while anyone listens, and at once when kicked.
 */
export function createEventFeed({ repository, clock, log }: EventFeedDeps) {
  const listeners = new Set<EventListener>();
  let position: number | undefined;
  /** The one query that finds where delivery starts: every caller of ready() waits for the same answer. */
  let starting: Promise<number> | undefined;
  let gap: { at: number; since: number } | undefined;
  let polling: Promise<void> | undefined;
  let again = false;
  let timer: ReturnType<typeof setInterval> | undefined;

  /**
   * Where delivery starts. Asked at once by a stream and by a poll, two queries could answer differently (an event
   * committed between them) and the later answer would move the position past an event nobody delivered: so there is
   * one query, and everyone waits for it.
   */
  function ready(): Promise<number> {
    if (position !== undefined) return Promise.resolve(position);
    const query: Promise<number> = (starting ??= repository.eventBounds().then(
      ({ newest }) => {
        if (starting === query) position ??= newest;
        return position ?? newest;
      },
      (e: unknown) => {
        if (starting === query) starting = undefined;
        throw e;
      },
    ));
    return query;
  }

  async function readNew(): Promise<void> {
    let from = await ready();
    for (;;) {
      const rows = await repository.eventsAfter(from, 500);
      for (const row of rows) {
        if (row.id !== from + 1) {
          if (gap?.at !== from) gap = { at: from, since: clock() };
          if (clock() - gap.since < EVENT_GAP_WAIT_MS) return;
        }
        gap = undefined;
        from = position = row.id;
        for (const listener of listeners) {
          try {
            listener(row);
          } catch (e) {
            log.error("an event listener failed", { error: (e as Error).message });
          }
        }
      }
      if (rows.length < 500) return;
    }
  }

  /** Reads what is new; a call while reading makes the reader go round once more. */
  function poll(): Promise<void> {
    if (polling) {
      again = true;
      return polling;
    }
    polling = (async () => {
      try {
        do {
          again = false;
          await readNew();
        } while (again);
      } catch (e) {
        log.warn("could not read connector events", { error: (e as Error).message });
      } finally {
        polling = undefined;
      }
    })();
    return polling;
  }

  return {
    /** The id of the last event delivered to listeners (the newest one at start). */
    ready,
    /** Something was written here: read it now (when anyone listens). */
    kick: () => {
      if (listeners.size > 0) void poll();
    },
    poll,
    /** Listens until the returned function is called; polling runs while anyone listens. */
    subscribe(listener: EventListener): () => void {
      // Nobody listened: what happened meanwhile is nobody's news (a stream that wants it replays it itself).
      if (listeners.size === 0) {
        position = undefined;
        starting = undefined;
        gap = undefined;
      }
      listeners.add(listener);
      timer ??= setInterval(() => void poll(), EVENT_POLL_MS);
      timer.unref?.();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },
    stop() {
      listeners.clear();
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
export type EventFeed = ReturnType<typeof createEventFeed>;
