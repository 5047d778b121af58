/**
 * Requests the service builds in-process for its own parts (a virtual server's member call, the era bridge's request
 * to a 2025 server) carry a message those parts read at the service's edge with the one strict reader
 * (strict-json.ts) and then rewrote. The parts they go to (the proxy's path, a virtual server's endpoint, the sessions
 * kept for 2025 clients of a 2026-07-28-only server, the gateway's POST reader) take that message as read instead of a
 * body to parse again (bench/RESULTS.md "2026-07-28 clients"): such a request has no body of its own, only its message
 * serialised once, to be sent on as it is. Kept by the Request object itself: only code in this process holds one, and
 * a client's request is never in here.
 */
export type ReadAlready = {
  message: unknown;
  /** The message serialised, as it is sent on unless something rewrites it (its size is what the limits count). */
  body: Uint8Array;
};

const read = new WeakMap<Request, ReadAlready>();

/** `request` (no body), marked as carrying `message`, read already. */
export function alreadyRead(request: Request, message: unknown, body: Uint8Array): Request {
  read.set(request, { message, body });
  return request;
}

/** The message `request` was built with in-process, if it was (see above). */
export const messageReadAlready = (request: Request): ReadAlready | undefined => read.get(request);

/**
 * The other way: an answer the proxy read whole (a JSON answer it observed: forward/forward.ts) keeps those bytes, so
 * that the part that sent the request in-process parses them rather than reading the Response's body again.
 */
const answers = new WeakMap<Response, Uint8Array>();

/** `response`, made of `body` whole. */
export function wholeAnswer(response: Response, body: Uint8Array): Response {
  answers.set(response, body);
  return response;
}

/** The bytes `response` was made of, if it was made whole in this process (its body is then not to be read). */
export const wholeAnswerOf = (response: Response): Uint8Array | undefined => answers.get(response);
