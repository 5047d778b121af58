/**
 * An answer made in-process rather than relayed (an era bridge's: proxy/service.ts; a virtual server's:
 * virtual-servers/mcp-routes.ts): what it holds (`release`: the caller's place among its open exchanges,
 * proxy/stream-limits.ts) is held until its body ends, and an event stream is watched (`watch`: users/access-watch.ts,
 * it ends when the caller loses access) as a relayed one is. A JSON answer is whole already: released at once.
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
