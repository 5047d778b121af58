/**
 * What a pushed stream may hold for a client that does not read it, past what its socket takes: 8 MiB (two messages
 * of the proxy's default PROXY__MAX_MESSAGE_BYTES).
 */
export const STREAM_BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * A response body the service writes as things happen (an event stream: /api/v1/events, a virtual server's GET
 * stream and its calls' streams), bounded in memory. Writing never waits for the client, so a client that stops
 * reading while events keep coming would have them all held here: once more than `backlog` bytes wait, the stream is
 * ended with an error (the client reconnects, and catches up as the stream allows) and `ended` is told, as when the
 * client goes away.
 */
export function pushStream(ended: () => void, backlog = STREAM_BACKLOG_BYTES) {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const over = () => {
    if (!open) return false;
    open = false;
    ended();
    return false;
  };
  const body = new ReadableStream<Uint8Array>(
    { start: (c) => void (controller = c), cancel: () => void over() },
    // Counted in bytes, nothing held ahead: `desiredSize` is minus what waits.
    new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
  );
  return {
    body,
    /** Writes `bytes`; false when the stream is over (the client went away, it was closed, or it fell behind). */
    push(bytes: Uint8Array): boolean {
      if (!open) return false;
      try {
        controller.enqueue(bytes);
      } catch {
        return over();
      }
      if ((controller.desiredSize ?? 0) >= -backlog) return true;
      controller.error(new Error(`The client did not read its event stream: more than ${backlog} bytes waited`));
      return over();
    },
    /** Ends the stream after what was written (the client reads it to the end); `ended` is not told. */
    close(): void {
      if (!open) return;
      open = false;
      try {
        controller.close();
      } catch {
        // The client closed it first.
      }
    },
    /** Whether it is still open. */
    get open(): boolean {
      return open;
    },
  };
}
export type PushStream = ReturnType<typeof pushStream>;
