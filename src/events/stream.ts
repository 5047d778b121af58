import type { ConnectorEventRow, ConnectorRepository } from "../connectors/repository";
import { TooManyRequests } from "../http-errors/errors";
import { pushStream } from "../http/push-stream";
import type { Job } from "../scheduler/scheduler";
import type { AccessWatch, StreamCredential } from "../users/access-watch";
import type { Principal } from "../users/model";
import type { EventFeed } from "./feed";

/** A comment line this often keeps idle proxies and load balancers from closing a quiet stream. */
export const HEARTBEAT_MS = 15_000;
/** How long events are kept, so a client can resume with Last-Event-ID (older: a `reset` event). */
export const EVENT_RETENTION_MS = 24 * 3_600_000;
/** The scheduler's: events older than EVENT_RETENTION_MS go. */
export const expireEvents = (events: Pick<ConnectorRepository, "deleteEventsBefore">, clock: () => number): Job => ({
  name: "expire-connector-events",
  run: async () => void (await events.deleteEventsBefore(clock() - EVENT_RETENTION_MS)),
});
/** Event streams one user may hold open at once. */
export const MAX_EVENT_STREAMS_PER_USER = 20;

const encoder = new TextEncoder();
/** [HTML §9.2.6](https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation): one event, its id for Last-Event-ID. */
const frame = (event: ConnectorEventRow) =>
  encoder.encode(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`);

export type EventStreamDeps = {
  feed: EventFeed;
  repository: Pick<ConnectorRepository, "eventsAfter" | "eventBounds">;
  /** Ends a stream whose caller lost access (disabled, demoted, credential revoked). */
  watch: AccessWatch;
  heartbeatMs?: number;
};

/**
 * The connector events a person may see (their own; an administrator: all) as a text/event-stream: each change once,
 * in order; resumed after `Last-Event-ID` from what is kept (EVENT_RETENTION_MS), else told to `reset` (reload the
 * list); a heartbeat comment every HEARTBEAT_MS.
 */
export function createEventStreams({ feed, repository, watch, heartbeatMs = HEARTBEAT_MS }: EventStreamDeps) {
  const open = new Map<string, number>();

  return async function stream(caller: Principal, credential: StreamCredential, lastEventId: string | null): Promise<Response> {
    const count = open.get(caller.id) ?? 0;
    if (count >= MAX_EVENT_STREAMS_PER_USER)
      throw new TooManyRequests(
        `You have ${MAX_EVENT_STREAMS_PER_USER} event streams open, the most a user may have: close one`,
        5,
      );
    open.set(caller.id, count + 1);
    const visible = (event: ConnectorEventRow) => caller.role === "admin" || event.owner_id === caller.id;
    const resumeFrom = lastEventId !== null && /^\d{1,15}$/.test(lastEventId) ? Number(lastEventId) : undefined;
    let unsubscribe: (() => void) | undefined;
    let unwatch: (() => void) | undefined;
    let heartbeat: ReturnType<typeof setInterval> | undefined;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      unsubscribe?.();
      unwatch?.();
      clearInterval(heartbeat);
      const left = (open.get(caller.id) ?? 1) - 1;
      if (left > 0) open.set(caller.id, left);
      else open.delete(caller.id);
    };

    // Listening starts, and where it starts is known, before the client is answered: an event written after the answer
    // reaches this stream. Events arriving meanwhile (and while the past is replayed) wait, so that none is out of order.
    let held: ConnectorEventRow[] | undefined = [];
    let pass: (event: ConnectorEventRow) => void = () => {};
    unsubscribe = feed.subscribe((event) => (held ? held.push(event) : pass(event)));
    let live: number;
    try {
      live = await feed.ready();
    } catch (e) {
      close();
      throw e;
    }

    // Ended when the client goes away or stops reading (http/push-stream.ts).
    const pushed = pushStream(close);
    const enqueue = (bytes: Uint8Array) => void (closed || pushed.push(bytes));
    const end = () => {
      close();
      pushed.close();
    };
    // The caller's access is checked again every second: a stream it lost access to ends (the client reconnects and
    // is authenticated afresh).
    unwatch = watch.watch(credential, caller, end);
    // Delivered in id order, each once: `after` is the last id passed (seen or not by this caller).
    let after = live;
    pass = (event: ConnectorEventRow) => {
      if (event.id <= after) return;
      after = event.id;
      if (visible(event)) enqueue(frame(event));
    };
    enqueue(encoder.encode("retry: 3000\n: connected\n\n"));
    // The past replayed after the answer has started (a store that fails meanwhile ends the stream: the client resumes).
    void (async () => {
      if (resumeFrom !== undefined) {
        const { oldest } = await repository.eventBounds();
        if (resumeFrom < oldest - 1) {
          // Older than what is kept: the client cannot catch up event by event.
          enqueue(
            encoder.encode(`event: reset\ndata: {"reason":"events after ${resumeFrom} are no longer kept: reload the list"}\n\n`),
          );
        } else {
          after = Math.min(resumeFrom, live);
          for (
            let rows = await repository.eventsAfter(after, 500);
            rows.length > 0 && after < live;
            rows = await repository.eventsAfter(after, 500)
          ) {
            for (const row of rows) if (row.id <= live) pass(row);
            if (rows.at(-1)!.id >= live) break;
          }
          after = Math.max(after, live);
        }
      }
      const waiting = held ?? [];
      held = undefined;
      for (const event of waiting) pass(event);
      if (!closed) heartbeat = setInterval(() => enqueue(encoder.encode(": heartbeat\n\n")), heartbeatMs);
    })().catch(end);
    return new Response(pushed.body, {
      headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
    });
  };
}
export type EventStreams = ReturnType<typeof createEventStreams>;
