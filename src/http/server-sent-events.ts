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
  const parser = createParser({
    onEvent: ({ id, event, data }) =>
      ready.push({ data, ...(id !== undefined && { id }), ...(event !== undefined && { event }) }),
    onRetry: (retry) => ready.push({ retry }),
  });
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
