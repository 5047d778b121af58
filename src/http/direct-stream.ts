/**
 * `source` passed on chunk by chunk as it comes (nothing read ahead), as a Bun "direct" stream: Bun.serve writes it
 * straight into the response, each chunk flushed, where a ReadableStream with a queue goes a slow path — some 70 µs of
 * CPU more per answer relayed (bench/RESULTS.md "Relaying event streams"). A reader (the service's own parts reading
 * an answer) gets each chunk as it is flushed, and its cancel, like a client's going away, ends the source too. A
 * write the client's socket cannot take yet is awaited, so nothing more is read meanwhile.
 *
 * `chunk` is told each chunk as it passes; `end` once, however the stream ends — the source's end or failure (the
 * client's stream is closed, never sent a problem midway), a cancel, or `close` (which ends it early: a caller that
 * lost access, a shutdown).
 */
export function directStream(
  source: ReadableStream<Uint8Array>,
  hooks: { chunk?(bytes: Uint8Array): void; end(): void },
): { body: ReadableStream<Uint8Array>; close(): void } {
  const reader = source.getReader();
  let ended = false;
  let closeController: (() => void) | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    hooks.end();
  };
  const underlying: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      let open = true;
      closeController = () => {
        if (!open) return;
        open = false;
        controller.close();
      };
      try {
        for (let chunk = await reader.read(); !chunk.done && !ended; chunk = await reader.read()) {
          hooks.chunk?.(chunk.value);
          const written = controller.write(chunk.value);
          if (written instanceof Promise) await written;
          const flushed = controller.flush();
          if (flushed instanceof Promise) await flushed;
        }
      } catch {
        // The source broke off midway: the stream ends here.
      }
      end();
      closeController();
    },
    cancel(reason) {
      end();
      // The source may have broken off already (its cancel then rejects): the reader is gone either way.
      return reader.cancel(reason).catch(() => undefined);
    },
  };
  return {
    // (TypeScript's DOM typings know no direct source; Bun's own do.)
    body: new ReadableStream(underlying as never) as ReadableStream<Uint8Array>,
    close() {
      end();
      void reader.cancel().catch(() => undefined);
      closeController?.();
    },
  };
}
