import { describe, expect, test } from "bun:test";
import type { ConnectorEventRow } from "../../src/connectors/repository";
import { createEventFeed, EVENT_GAP_WAIT_MS } from "../../src/events/feed";
import { createAccessWatch } from "../../src/users/access-watch";
import { createEventStreams } from "../../src/events/stream";
import { createLogger } from "../../src/observability/logger";
import { steppedClock } from "../support/app";
import { sseReader } from "../support/sse";

// The feed's ordering rule, with a table of events a test controls: PostgreSQL hands out ids as transactions insert,
// so event 3 may become visible after event 4. The feed holds 4 back until 3 is there, or until the hole has lasted
// EVENT_GAP_WAIT_MS (a rolled-back transaction leaves it for good). No real store can be made to commit out of
// order on demand, hence the table in memory.
function table() {
  const rows: ConnectorEventRow[] = [];
  const event = (id: number): ConnectorEventRow => ({
    id,
    type: "connector.updated",
    connector_id: `c${id}`,
    owner_id: "u",
    data: {
      id: `c${id}`,
      owner_id: "u",
      name: null,
      url: "https://x.example",
      state: "connected",
      disconnect_reason: null,
      updated_at: new Date(0).toISOString(),
    },
    created_at: 0,
  });
  return {
    commit: (...ids: number[]) => rows.push(...ids.map(event)),
    repository: {
      eventsAfter: async (after: number, limit: number) =>
        rows
          .filter((r) => r.id > after)
          .sort((a, b) => a.id - b.id)
          .slice(0, limit),
      eventBounds: async () => ({ newest: Math.max(0, ...rows.map((r) => r.id)), oldest: Math.min(...rows.map((r) => r.id)) }),
    },
  };
}

const log = createLogger({ level: "error", write: () => {} });

describe("the event feed", () => {
  test("delivers in id order: an event behind a hole waits for the hole to fill", async () => {
    const events = table();
    const clock = steppedClock();
    const feed = createEventFeed({ repository: events.repository, clock: clock.now, log });
    const got: number[] = [];
    const stop = feed.subscribe((e) => got.push(e.id));
    await feed.ready();
    events.commit(1, 2, 4);
    await feed.poll();
    expect(got).toEqual([1, 2]);
    events.commit(3);
    await feed.poll();
    expect(got).toEqual([1, 2, 3, 4]);
    stop();
  });

  test("a hole that lasts is a rolled-back transaction: skipped after EVENT_GAP_WAIT_MS", async () => {
    const events = table();
    const clock = steppedClock();
    const feed = createEventFeed({ repository: events.repository, clock: clock.now, log });
    const got: number[] = [];
    const stop = feed.subscribe((e) => got.push(e.id));
    await feed.ready();
    events.commit(1, 3);
    await feed.poll();
    expect(got).toEqual([1]);
    clock.advance(EVENT_GAP_WAIT_MS - 1);
    await feed.poll();
    expect(got).toEqual([1]);
    clock.advance(2);
    await feed.poll();
    expect(got).toEqual([1, 3]);
    stop();
  });
});

describe("where delivery starts", () => {
  // The race: a stream asks where delivery starts while a poll asks the same; an event committed between the two
  // queries made the poll's later answer jump past it, and the stream (which starts at the earlier answer) never got it.
  test("a stream and a poll asking at once get one answer: an event committed between their questions is delivered", async () => {
    const events = table();
    const answers: (() => void)[] = [];
    const slow = {
      ...events.repository,
      // Each question is answered from the table as it is when asked, but only when the test says so.
      eventBounds: () => {
        const bounds = events.repository.eventBounds();
        return new Promise<{ newest: number; oldest: number }>((resolve) => answers.push(() => resolve(bounds)));
      },
    };
    const feed = createEventFeed({ repository: slow, clock: Date.now, log });
    const got: number[] = [];
    const stop = feed.subscribe((e) => got.push(e.id));
    const streamStart = feed.ready();
    events.commit(1);
    const polled = feed.poll();
    for (const answer of answers.splice(0)) answer();
    await Promise.resolve();
    for (const answer of answers.splice(0)) answer();
    expect(await streamStart).toBe(0);
    await polled;
    await feed.poll();
    expect(got).toEqual([1]);
    stop();
  });

  test("an event written right after the stream answered reaches it, however slow the store", async () => {
    const events = table();
    // A busy pool: the question runs a while after it is asked, and sees the table as it is then.
    const slow = {
      ...events.repository,
      eventBounds: () => Bun.sleep(5).then(() => events.repository.eventBounds()),
    };
    const feed = createEventFeed({ repository: slow, clock: Date.now, log });
    const watch = createAccessWatch({ recheck: async () => ({ id: "u", username: "u", role: "user" }) });
    const response = await createEventStreams({ feed, repository: slow, watch })(
      { id: "u", username: "u", role: "user" },
      { authorization: null, cookie: null },
      null,
    );
    events.commit(1);
    feed.kick();
    const reader = sseReader(response);
    expect(Number((await reader.nextEvent()).id)).toBe(1);
    await reader.close();
  });
});

describe("an idle event stream", () => {
  test("sends a heartbeat comment so that proxies keep it open", async () => {
    const events = table();
    const feed = createEventFeed({ repository: events.repository, clock: Date.now, log });
    const watch = createAccessWatch({ recheck: async () => ({ id: "u", username: "u", role: "user" }) });
    const stream = await createEventStreams({ feed, repository: events.repository, watch, heartbeatMs: 20 })(
      { id: "u", username: "u", role: "user" },
      { authorization: null, cookie: null },
      null,
    );
    const reader = sseReader(stream);
    const comments: string[] = [];
    while (comments.length < 3) {
      const next = await reader.next();
      if (next.comment) comments.push(next.comment);
    }
    expect(comments).toEqual(["connected", "heartbeat", "heartbeat"]);
    await reader.close();
  });
});
