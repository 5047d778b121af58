/**
 * Requests the service builds in-process for its own parts (a virtual server's member call, the era bridge's request
 * to a 2025 server) carry a message those parts read at the service's edge with the one strict reader
 * (strict-json.ts) and then rewrote. The proxy's path they go through takes that message as read instead of parsing
 * the body it was serialised into again (bench/RESULTS.md "2026-07-28 clients"). Kept by the Request object itself:
 * only code in this process holds one, and a client's request is never in here.
 */
const read = new WeakMap<Request, unknown>();

/** `request`, its body `message` serialised, marked as read already. */
export function alreadyRead(request: Request, message: unknown): Request {
  read.set(request, message);
  return request;
}

/** The message `request` was built from in-process, if it was (see above). */
export const messageReadAlready = (request: Request): unknown => read.get(request);
