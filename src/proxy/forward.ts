import type { FetchLike } from "../app";
import { bodyTooLarge, UpstreamFailed, UpstreamTimeout } from "../http-errors/errors";
import type { Counter, Histogram, UpDown } from "../metrics/registry";
import { clientResponseHeaders } from "./headers";

export type ProxyMetrics = { requests: Counter; latency: Histogram; openStreams: UpDown };

export type ForwardOptions = {
  fetch: FetchLike;
  /** Time allowed until the upstream's response headers; the body may then stream for as long as it lasts. */
  headersTimeoutMs: number;
  metrics: ProxyMetrics;
  /** Notification streams (GET) that shutdown may end early; returns the function that forgets one. */
  streams: Set<() => void>;
  /** The largest request body relayed (a declared length is checked before; this counts undeclared ones). */
  maxBodyBytes?: number;
  /** What the upstream is, in error messages ("MCP server", "agent"). */
  upstreamName: string;
};

/** What the upstream answered, before the body: a status the caller may act on (401) before it is relayed. */
export type Forwarded = { upstream: Response; relay(): Response };

/**
 * Sends the client's request to `url` and streams the answer back. No body is buffered: the request
 * body is piped up, and every chunk of the response goes to the client as it arrives. The upstream
 * request is aborted as soon as the client goes away.
 */
export async function forward(
  request: Request,
  url: URL,
  headers: Headers,
  options: ForwardOptions,
  body: ReadableStream<Uint8Array> | null = request.body,
): Promise<Forwarded> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  request.signal.addEventListener("abort", abort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.headersTimeoutMs);
  const started = performance.now();
  const hasBody = request.method === "POST" && body !== null;
  let tooLarge = false;
  if (hasBody && options.maxBodyBytes !== undefined && !request.headers.has("content-length")) {
    const limit = options.maxBodyBytes;
    let size = 0;
    body = body!.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, stream) {
          size += chunk.byteLength;
          if (size > limit) {
            tooLarge = true;
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
      ...(hasBody && { duplex: "half" }),
    } as RequestInit);
  } catch (e) {
    request.signal.removeEventListener("abort", abort);
    if (tooLarge) throw bodyTooLarge(options.maxBodyBytes!, "PROXY__MAX_BODY_BYTES");
    options.metrics.requests.inc(timedOut ? "504" : "502");
    if (timedOut) throw new UpstreamTimeout(`The ${options.upstreamName} sent no response within ${options.headersTimeoutMs / 1000} s`);
    throw new UpstreamFailed(`The ${options.upstreamName} could not be reached: ${describeFetchError(e)}`);
  } finally {
    clearTimeout(timer);
  }
  options.metrics.latency.observe((performance.now() - started) / 1000);
  options.metrics.requests.inc(String(upstream.status));

  return {
    upstream,
    relay() {
      const responseHeaders = clientResponseHeaders(upstream.headers);
      const body = upstream.body;
      const streaming = body !== null && (upstream.headers.get("content-type") ?? "").startsWith("text/event-stream");
      if (!streaming) {
        request.signal.removeEventListener("abort", abort);
        return new Response(body, { status: upstream.status, statusText: upstream.statusText, headers: responseHeaders });
      }
      options.metrics.openStreams.inc();
      let close: (() => void) | undefined;
      const tracked = trackEnd(
        body,
        () => {
          request.signal.removeEventListener("abort", abort);
          options.metrics.openStreams.dec();
          if (close) options.streams.delete(close);
        },
        (closer) => {
          // A GET stream carries only server-initiated messages: at shutdown the client reconnects elsewhere
          // (with Last-Event-ID), so it need not hold the service up. A POST's stream answers a request: it runs out.
          if (request.method === "GET") options.streams.add((close = closer));
        },
      );
      return new Response(tracked, { status: upstream.status, statusText: upstream.statusText, headers: responseHeaders });
    },
  };
}

/** Passes chunks one by one (highWaterMark 0: nothing is read ahead) and reports the end, however it comes. */
function trackEnd(
  body: ReadableStream<Uint8Array>,
  onEnd: () => void,
  expose: (close: () => void) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        expose(() => {
          end();
          void reader.cancel().catch(() => undefined);
          controller.close();
        });
      },
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (chunk.done) {
            end();
            controller.close();
          } else controller.enqueue(chunk.value);
        } catch {
          // The upstream broke off mid-stream: close the client's stream rather than send a problem into it.
          end();
          controller.close();
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

export function describeFetchError(e: unknown): string {
  const err = e as { code?: string; message?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "connection refused";
  if (code === "ECONNRESET" || code === "ConnectionClosed") return "connection closed by the server";
  if (code === "FailedToOpenSocket" || code === "ENOTFOUND") return "the host could not be resolved or reached";
  if (code?.startsWith("ERR_TLS") || code?.includes("CERT") || code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE") {
    return `TLS failed (${code})`;
  }
  return code ?? err.message ?? "network error";
}
