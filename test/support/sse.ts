/** One server-sent event as a client sees it ([HTML §9.2.6](https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)); comments are kept apart. */
export type SseEvent = { id?: string; event?: string; data: string; comment?: string };

/**
 * Reads an event stream frame by frame: `next()` resolves with the next event (or comment), or rejects after
 * `timeoutMs` with what was read so far. `close()` cancels the stream, as a client going away does.
 */
export function sseReader(response: Response, timeoutMs = 5_000) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const ready: SseEvent[] = [];
  // One read in flight at a time: a read that outlives a timeout is picked up by the next call, not lost.
  let pending: ReturnType<typeof reader.read> | undefined;
  async function fill(): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (ready.length === 0) {
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no event within ${timeoutMs} ms (buffer: ${JSON.stringify(buffer)})`);
      pending ??= reader.read();
      const chunk = await Promise.race([pending, Bun.sleep(left).then(() => undefined)]);
      if (chunk === undefined) continue;
      pending = undefined;
      if (chunk.done) throw new Error(`the stream ended (buffer: ${JSON.stringify(buffer)})`);
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: SseEvent = { data: "" };
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) event.comment = line.slice(1).trim();
          else if (line.startsWith("id: ")) event.id = line.slice(4);
          else if (line.startsWith("event: ")) event.event = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        event.data = data.join("\n");
        ready.push(event);
      }
    }
  }
  return {
    async next(): Promise<SseEvent> {
      await fill();
      return ready.shift()!;
    },
    /** The next event that is not a comment (nor the opening `retry`). */
    async nextEvent(): Promise<SseEvent> {
      for (;;) {
        const event = await this.next();
        if (event.event !== undefined || event.data !== "") return event;
      }
    },
    close: () => reader.cancel().catch(() => undefined),
  };
}
