import { bodyTooLarge, UpstreamAnswerRefused, UpstreamFailed, UpstreamTimeout } from "../http-errors/errors";
import { directStream } from "../http/direct-stream";
import { wholeAnswer } from "../http/read-already";
import { classifyFetchFailure, type FetchLike } from "../http/fetch";
import type { Counter, Histogram, Registry, UpDown } from "../metrics/registry";
import { clientResponseHeaders } from "./headers";

export type RelayMetrics = { requests: Counter; latency: Histogram; openStreams: UpDown };

export type ForwardOptions = {
  fetch: FetchLike;
  /** Time allowed until the upstream's response headers; the body may then stream for as long as it lasts. */
  headersTimeoutMs: number;
  metrics: RelayMetrics;
  /** Notification streams (GET) that shutdown may end early; returns the function that forgets one. */
  streams: Set<() => void>;
  /** The largest request body relayed (PROXY__MAX_BODY_BYTES): a declared length is refused, an undeclared one counted. */
  maxBodyBytes: number;
  /** What the upstream is, in error messages ("MCP server", "agent"). */
  upstreamName: string;
};

export type RelaySettings = { fetch: FetchLike; headersTimeoutMs: number; maxBodyBytes: number };

/** Forwarding options and metrics (`<prefix>_proxy_…`) for one relay: the MCP proxy ("mcp") or the A2A one ("a2a"). */
export function forwardOptions(
  registry: Registry,
  prefix: string,
  upstreamName: string,
  buckets: number[],
  settings: RelaySettings,
): ForwardOptions {
  return {
    ...settings,
    streams: new Set(),
    upstreamName,
    metrics: {
      requests: registry.counter(
        `${prefix}_proxy_requests_total`,
        `${upstreamName} proxy requests by the status relayed (502/504: upstream failed)`,
        "status",
      ),
      latency: registry.histogram(
        `${prefix}_proxy_upstream_latency_seconds`,
        `Time from sending a request to the ${upstreamName} to its response headers`,
        buckets,
      ),
      openStreams: registry.upDown(`${prefix}_proxy_open_streams`, `Event streams from the ${upstreamName} being relayed now`),
    },
  };
}

/**
 * The only bodies relayed (MCP Streamable HTTP, A2A JSON-RPC): JSON — `application/json`, or a JSON type named by the
 * `+json` suffix ([RFC 6839 §3.1](https://www.rfc-editor.org/rfc/rfc6839#section-3.1)), such as a gateway's RFC 9457
 * problem document refusing a request — and event streams. A browser shows them as text, never as a page.
 */
const relayable = (type: string) =>
  type === "application/json" || type === "text/event-stream" || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(type);

/**
 * Why an upstream's answer is not relayed, if it is not: a redirect (never followed, and never passed to a browser as
 * one of the service's own), or a body of another type (HTML, SVG, XML … would render on the service's origin and run
 * what the upstream wrote). An answer without a body passes: 202 to a notification, 204, a DELETE's empty 200.
 */
function refusal(
  upstream: Response,
  type: string | null,
  name: string,
  hasBody: () => boolean,
): UpstreamAnswerRefused | undefined {
  const { status } = upstream;
  if (status >= 300 && status < 400) {
    return new UpstreamAnswerRefused(
      502,
      `The ${name} answered ${status} redirecting to ${upstream.headers.get("location") ?? "nowhere"}: redirects are not relayed; if it moved, change the URL`,
    );
  }
  if (type !== null && relayable(type.split(";")[0]!.trim().toLowerCase())) return undefined;
  if (!hasBody()) return undefined;
  const what = type === null ? "a body of no declared type" : JSON.stringify(type.slice(0, 100));
  return new UpstreamAnswerRefused(
    status >= 400 && status < 500 ? status : 502,
    `The ${name} answered ${status} with ${what}; only JSON (application/json, application/*+json) and text/event-stream are relayed`,
  );
}

/** The body of an answer with no declared type, if it has one: its first chunk is read to tell (a chunked empty body says nothing before). */
async function untypedBody(upstream: Response): Promise<ReadableStream<Uint8Array> | null> {
  if (upstream.body === null || upstream.headers.get("content-length") === "0") return null;
  const reader = upstream.body.getReader();
  const first = await reader.read().catch(() => ({ done: true as const, value: undefined }));
  if (first.done) return null;
  return new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(first.value),
    pull: async (controller) => {
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

const tooLarge = (options: ForwardOptions) => bodyTooLarge(options.maxBodyBytes, "PROXY__MAX_BODY_BYTES");

/** Watches a relayed stream's caller: `close` ends the stream; the answer forgets it. */
export type StreamWatch = (close: () => void) => () => void;

/**
 * Offered each plain answer (not an event stream) before it is relayed: a caller that reads such answers anyway (the MCP
 * proxy's observer, for the audit trail) takes one whole — read at once, never made a stream — by answering where its
 * bytes go and what to give back once they are read (its hold on them); undefined: the answer streams.
 */
export type TakeWhole = (upstream: Response) => { take(bytes: Uint8Array): void; release(): void } | undefined;

/**
 * Offered each event stream before it is relayed: a caller that reads such answers anyway (the MCP proxy's observer)
 * is told each chunk as it passes and the end, in the one stream the client reads — no stream of its own around it
 * (each JS stream between the upstream and the client cost tens of µs per answer: bench/RESULTS.md "Relaying event
 * streams"); undefined: nothing to tell.
 */
export type TapStream = (upstream: Response) => { chunk(bytes: Uint8Array): void; end(): void } | undefined;

/** What a caller reads of the answer as it is relayed (TakeWhole, TapStream). */
export type Reading = { takeWhole?: TakeWhole | undefined; tapStream?: TapStream | undefined };

/**
 * What the upstream answered, before the body: a status the caller may act on (401) before it is relayed.
 * `respond` calls `ended` once the exchange is over: at once for a plain answer, when the stream ends for an event stream.
 */
export type Forwarded = {
  upstream: Response;
  /** The answer for the client; throws UpstreamAnswerRefused when it is not relayed (a redirect, a type a browser renders). */
  respond(ended?: () => void, watch?: StreamWatch, reading?: Reading): Promise<Response>;
};

/**
 * How long a request waits for the upstream's answer before the client's going away is watched for. Most answers come
 * sooner, and watching costs: Bun makes a request's AbortSignal only when it is first asked for (~2 µs with its
 * listener, a tenth of what the proxy adds to a call). A client gone by then is seen at once: the signal Bun makes
 * late says so.
 */
export const WATCH_CLIENT_AFTER_MS = 50;

/**
 * Sends the client's request to `url` and streams the answer back. No body is buffered: the request
 * body is piped up, and every chunk of the response goes to the client as it arrives. The upstream
 * request is aborted when the client goes away and when no answer comes in time. The one place the relays' body
 * limit is enforced.
 */
export async function forward(
  request: Request,
  url: URL,
  headers: Headers,
  options: ForwardOptions,
  body: ReadableStream<Uint8Array> | Uint8Array | null = request.body,
): Promise<Forwarded> {
  const hasBody = request.method === "POST" && body !== null;
  // A body already read (and capped) by the caller: sent as it is.
  const read = body instanceof Uint8Array;
  if (hasBody && !read && Number(request.headers.get("content-length") ?? "0") > options.maxBodyBytes) {
    await (body as ReadableStream).cancel().catch(() => undefined);
    throw tooLarge(options);
  }
  const controller = new AbortController();
  const abort = () => controller.abort();
  let watching = false;
  const watchClient = () => {
    if (watching) return;
    watching = true;
    request.signal.addEventListener("abort", abort, { once: true });
    if (request.signal.aborted) abort();
  };
  const unwatchClient = () => {
    if (watching) request.signal.removeEventListener("abort", abort);
  };
  let timedOut = false;
  const timeout = options.headersTimeoutMs;
  const early = Math.min(WATCH_CLIENT_AFTER_MS, timeout);
  // One timer: it starts watching the client, then waits out the rest of the header timeout.
  let timer = setTimeout(() => {
    watchClient();
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeout - early);
  }, early);
  const started = performance.now();
  let overLimit = false;
  if (hasBody && !read && !request.headers.has("content-length")) {
    const limit = options.maxBodyBytes;
    let size = 0;
    body = (body as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, stream) {
          size += chunk.byteLength;
          if (size > limit) {
            overLimit = true;
            controller.abort();
            stream.error(new Error("request body too large"));
          } else stream.enqueue(chunk);
        },
      }),
    );
  }
  let upstream: Response;
  try {
    upstream = await options.fetch(url, {
      method: request.method,
      headers,
      body: hasBody ? body : undefined,
      signal: controller.signal,
      redirect: "manual",
      // Bun: pass compressed bodies through as they are; the client's accept-encoding was forwarded.
      decompress: false,
      ...(hasBody && !read && { duplex: "half" }),
    } as RequestInit);
  } catch (e) {
    unwatchClient();
    if (overLimit) throw tooLarge(options);
    options.metrics.requests.inc(timedOut ? "504" : "502");
    if (timedOut) throw new UpstreamTimeout(`The ${options.upstreamName} sent no response within ${timeout / 1000} s`);
    throw new UpstreamFailed(`The ${options.upstreamName} could not be reached: ${classifyFetchFailure(e).detail}`);
  } finally {
    clearTimeout(timer);
  }
  options.metrics.latency.observe((performance.now() - started) / 1000);
  options.metrics.requests.inc(String(upstream.status));

  return {
    upstream,
    async respond(ended, watch, { takeWhole, tapStream } = {}) {
      const { status, statusText } = upstream;
      // MCP Streamable HTTP: a 202 carries no body; nor do 204 and 205 (RFC 9110 §15.3.5, §15.3.6): whatever came is dropped.
      const bodiless = status === 202 || status === 204 || status === 205;
      const type = upstream.headers.get("content-type");
      if (bodiless) void upstream.body?.cancel().catch(() => undefined);
      // An untyped body is read up to its first chunk to tell whether there is one; a typed one is left as it is.
      const untyped = bodiless || type !== null ? null : await untypedBody(upstream);
      const refused = refusal(upstream, type, options.upstreamName, () =>
        bodiless ? false : type === null ? untyped !== null : upstream.body !== null,
      );
      if (refused) {
        unwatchClient();
        void (untyped ?? upstream.body)?.cancel().catch(() => undefined);
        ended?.();
        throw refused;
      }
      const streaming = !bodiless && type !== null && type.startsWith("text/event-stream");
      const whole = !bodiless && type !== null && !streaming ? takeWhole?.(upstream) : undefined;
      let body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;
      if (whole) {
        try {
          body = await upstream.bytes();
          whole.take(body);
        } catch (e) {
          unwatchClient();
          ended?.();
          throw new UpstreamFailed(`The ${options.upstreamName} broke off its answer: ${(e as Error).message}`);
        } finally {
          whole.release();
        }
      } else body = bodiless ? null : type === null ? untyped : upstream.body;
      const responseHeaders = clientResponseHeaders(upstream.headers, body !== null);
      if (body === null || !streaming) {
        unwatchClient();
        ended?.();
        const response = new Response(body, { status, statusText, headers: responseHeaders });
        return body instanceof Uint8Array ? wholeAnswer(response, body) : response;
      }
      // An event stream lasts: a client that goes away ends it, and with it the upstream's.
      watchClient();
      options.metrics.openStreams.inc();
      let close: (() => void) | undefined;
      let unwatch: (() => void) | undefined;
      const tap = tapStream?.(upstream);
      const tracked = trackEnd(
        body as ReadableStream<Uint8Array>,
        tap,
        () => {
          unwatchClient();
          options.metrics.openStreams.dec();
          if (close) options.streams.delete(close);
          unwatch?.();
          ended?.();
        },
        (closer) => {
          // A GET stream carries only server-initiated messages: at shutdown the client reconnects elsewhere
          // (with Last-Event-ID), so it need not hold the service up. A POST's stream answers a request: it runs out.
          if (request.method === "GET") options.streams.add((close = closer));
          // Either ends early when the caller loses access (users/access-watch.ts).
          unwatch = watch?.(closer);
        },
      );
      return new Response(tracked, { status, statusText, headers: responseHeaders });
    },
  };
}

/** Passes chunks one by one as they come (http/direct-stream.ts), each told to `tap`, and reports the end, however it comes. */
function trackEnd(
  body: ReadableStream<Uint8Array>,
  tap: { chunk(bytes: Uint8Array): void; end(): void } | undefined,
  onEnd: () => void,
  expose: (close: () => void) => void,
): ReadableStream<Uint8Array> {
  const tracked = directStream(body, {
    ...(tap && { chunk: (bytes: Uint8Array) => tap.chunk(bytes) }),
    end() {
      tap?.end();
      onEnd();
    },
  });
  expose(tracked.close);
  return tracked.body;
}
