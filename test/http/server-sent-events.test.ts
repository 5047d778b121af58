import { describe, expect, test } from "bun:test";
import { eventsOf, serverSentEvents } from "../../src/http/server-sent-events";

/** A body that arrives in the given chunks (as a network would cut it). */
const body = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });

const all = async (stream: ReadableStream<Uint8Array>) => {
  const events = [];
  for await (const event of serverSentEvents(stream)) events.push(event);
  return events;
};

describe("server-sent events (HTML §9.2.6)", () => {
  test("lines end in LF, CR or CRLF, cut anywhere; data lines join with LF; comments are skipped", async () => {
    const events = await all(body("id: 1\r", "\ndata: a\rdata: b\r\n", "\r\n: a comment\n", "event: message\ndata:c\n\n"));
    expect(events).toEqual([
      { id: "1", data: "a\nb" },
      { event: "message", data: "c" },
    ]);
  });

  test("a priming event (an id and empty data) is an event; retry is told apart; an id with NUL is ignored", async () => {
    expect(await all(body("id: p-1\ndata:\n\nretry: 2500\n\nid: x\0y\ndata: z\n\n"))).toEqual([
      { id: "p-1", data: "" },
      { retry: 2500 },
      { data: "z" },
    ]);
  });

  test("no body, no events; an event not ended by an empty line is not one", async () => {
    expect(await all(body("data: unfinished\n"))).toEqual([]);
    const none = [];
    for await (const event of serverSentEvents(null)) none.push(event);
    expect(none).toEqual([]);
  });
});

test("a body read whole already gives the same events (eventsOf)", () => {
  expect(eventsOf("id: 1\r\ndata: a\r\ndata: b\r\n\r\n: note\nretry: 10\n\ndata: c\n")).toEqual([
    { id: "1", data: "a\nb" },
    { retry: 10 },
  ]);
});
