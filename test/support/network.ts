import type { FetchLike } from "../../src/http/fetch";

export type Handler = (request: Request) => Response | Promise<Response>;

/**
 * A fake network for tests through `app.handle`: the service's fetch reaches in-process handlers by origin (the
 * MCP SDK's own server transport, a scripted authorization server …), with no socket. What it keeps of real
 * fetch: an unknown host does not resolve, a host with no handler refuses the connection, and an aborted
 * request (client gone, timeout) rejects at once even if its handler never answers.
 */
export function fakeNetwork() {
  const handlers = new Map<string, Handler>();
  /** Every request that reached a handler, in order: method, URL (by name), and the host the service connected to. */
  const requests: { method: string; url: string; connectedTo: string }[] = [];
  const refused = (url: string) => Object.assign(new TypeError(`fetch to ${url} failed`), { code: "ConnectionRefused" });

  const fetch: FetchLike = async (input, init) => {
    const sent = new Request(input, init);
    const request = addressedByName(sent);
    const handler = handlers.get(new URL(request.url).origin);
    if (!handler) throw refused(request.url);
    requests.push({ method: request.method, url: request.url, connectedTo: new URL(sent.url).hostname });
    const signal = request.signal;
    if (signal.aborted) throw signal.reason;
    return new Promise<Response>((resolve, reject) => {
      const abort = () => reject(signal.reason ?? new DOMException("The operation was aborted", "AbortError"));
      signal.addEventListener("abort", abort, { once: true });
      Promise.resolve(handler(request)).then((response) => {
        signal.removeEventListener("abort", abort);
        resolve(abortable(response, signal));
      }, reject);
    });
  };

  return {
    fetch,
    requests,
    /** Serves `origin` (scheme://host[:port]) with `handler` until `remove`. */
    serve(origin: string, handler: Handler): string {
      const normalised = new URL(origin).origin;
      handlers.set(normalised, handler);
      return normalised;
    },
    remove(origin: string): void {
      handlers.delete(new URL(origin).origin);
    },
    /** The URL guard's resolver: names served here resolve to a public documentation address; others do not. */
    async resolve(host: string): Promise<string[]> {
      for (const origin of handlers.keys()) if (new URL(origin).hostname === host) return ["203.0.113.7"];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    },
  };
}
export type FakeNetwork = ReturnType<typeof fakeNetwork>;

/**
 * The service connects to the address its URL guard checked, naming the host in `Host` (security/guarded-fetch.ts):
 * the handler sees the request as sent to the name, as a real server behind that address would.
 */
function addressedByName(request: Request): Request {
  const host = request.headers.get("host");
  const url = new URL(request.url);
  if (!host || host === url.host) return request;
  const headers = new Headers(request.headers);
  headers.delete("host");
  return new Request(`${url.protocol}//${host}${url.pathname}${url.search}`, {
    method: request.method,
    headers,
    body: request.body,
    signal: request.signal,
    ...(request.body && { duplex: "half" }),
  } as RequestInit);
}

/** As with real fetch, aborting the request after its response arrived breaks off the body (the upstream sees a cancel). */
function abortable(response: Response, signal: AbortSignal): Response {
  const source = response.body;
  if (!source) return response;
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        signal.addEventListener(
          "abort",
          () => {
            try {
              controller.error(signal.reason);
            } catch {
              // Already closed: nothing to break off.
            }
            void reader.cancel(signal.reason).catch(() => undefined);
          },
          { once: true },
        );
      },
      async pull(controller) {
        const chunk = await reader.read();
        if (chunk.done) controller.close();
        else controller.enqueue(chunk.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
