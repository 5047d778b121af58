/**
 * Each request's id (the client's `x-request-id` when it is sane, else a new UUID), set by the server as the
 * request arrives and read wherever a log line or a problem's `instance` names the request.
 */
export type RequestIds = WeakMap<Request, string>;

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function assignRequestId(request: Request, requestIds: RequestIds): string {
  const incoming = request.headers.get("x-request-id");
  const id = incoming && INCOMING_ID.test(incoming) ? incoming : crypto.randomUUID();
  requestIds.set(request, id);
  return id;
}
