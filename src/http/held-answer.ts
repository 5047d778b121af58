import { directStream } from "./direct-stream";

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
  // The type first: a body made from a string becomes a stream when asked for (`body`), which a JSON answer never is.
  const stream = (response.headers.get("content-type") ?? "").startsWith("text/event-stream");
  if (!stream || !response.body) {
    release();
    return response;
  }
  let forget: (() => void) | undefined;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    release();
    forget?.();
  };
  const { body, close } = directStream(response.body, { end: finish });
  forget = watch?.(close);
  return new Response(body, { status: response.status, headers: response.headers });
}
