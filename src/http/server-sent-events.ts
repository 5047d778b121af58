import { createParser } from "eventsource-parser";

/** One event of a text/event-stream body; `retry` alone when the stream set its reconnection time. */
export type ServerSentEvent = { id?: string; event?: string; data?: string; retry?: number };

/**
 * The events of a text/event-stream body (HTML "Server-sent events" §9.2.6 "Interpreting an event stream"), read by
 * eventsource-parser, the parser the MCP SDK's transports use: so an event is what the SDK would see (one with a
 * `data` line, an empty one too — MCP 2025-11-25's priming event carries an id and empty data).
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array> | null): AsyncGenerator<ServerSentEvent> {
  if (!body) return;
  const ready: ServerSentEvent[] = [];
  const parser = parserInto(ready);
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      while (ready.length > 0) yield ready.shift()!;
    }
  } finally {
    reader.releaseLock();
  }
}

/** The events of an event stream read whole already (the text of its body), as `serverSentEvents` reads them. */
export function eventsOf(text: string): ServerSentEvent[] {
  const events: ServerSentEvent[] = [];
  parserInto(events).feed(text);
  return events;
}

/**
 * The events of a stream someone else reads (a relayed stream, one branch of a tee), as `serverSentEvents` reads them:
 * each chunk is fed as it passes, and `onEvent` told of every event it completes.
 */
export function eventTap(onEvent: (event: ServerSentEvent) => void): (chunk: Uint8Array) => void {
  const ready: ServerSentEvent[] = [];
  const parser = parserInto(ready);
  const decoder = new TextDecoder();
  return (chunk) => {
    parser.feed(decoder.decode(chunk, { stream: true }));
    for (const event of ready.splice(0)) onEvent(event);
  };
}

/** A parser that puts each event it reads into `ready`. */
function parserInto(ready: ServerSentEvent[]) {
  return createParser({
    onEvent: ({ id, event, data }) =>
      ready.push({ data, ...(id !== undefined && { id }), ...(event !== undefined && { event }) }),
    onRetry: (retry) => ready.push({ retry }),
  });
}
