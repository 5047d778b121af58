/**
 * An answer the proxy did not relay itself (an era bridge's, proxy/service.ts): the caller's place among its open
 * exchanges (stream-limits.ts) is held until the answer's body ends, as for a relayed one, and an event stream is
 * watched like a relayed one (users/access-watch.ts: it ends when the caller loses access). A JSON answer is whole
 * already: its place is given back at once.
 */
export function heldAnswer(
  response: Response,
  release: () => void,
  watch: ((close: () => void) => () => void) | undefined,
): Response {
  const stream = (response.headers.get("content-type") ?? "").startsWith("text/event-stream");
  if (!response.body || !stream) {
    release();
    return response;
  }
  const reader = response.body.getReader();
  let forget: (() => void) | undefined;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    release();
    forget?.();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (!chunk.done) return controller.enqueue(chunk.value);
        finish();
        controller.close();
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  forget = watch?.(() => {
    finish();
    void reader.cancel().catch(() => undefined);
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
