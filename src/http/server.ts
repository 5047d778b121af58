import type { Server } from "bun";
import { errorResponse } from "../http-errors/problem";
import type { Logger } from "../observability/logger";
import { assignRequestId, type RequestIds } from "./request-id";
import type { TlsCertificate } from "./tls";

export type Fetch = (request: Request) => Response | Promise<Response>;
/** Bun's native routes (`path` → method → handler) served ahead of `fetch`. */
export type NativeRoutes = Record<
  string,
  Partial<
    Record<"GET" | "POST" | "DELETE" | "OPTIONS", (request: Request & { params: Record<string, string> }) => Promise<Response>>
  >
>;

export type ServerOptions = {
  routes?: NativeRoutes;
  host: string;
  port: number;
  /** Serve https with this certificate; `replaceCertificate` swaps it later. */
  tls?: TlsCertificate;
  /** Bun's own cap on a request body, a backstop above the limits the API and the relays enforce themselves. */
  maxRequestBodySize: number;
  log: Logger;
  requestIds: RequestIds;
  clock?: () => number;
};

export type RunningServer = {
  /** The listener new connections reach (a certificate replacement starts a new one). */
  readonly server: Server<undefined>;
  url: string;
  /**
   * New TLS handshakes get `tls`; connections already open keep theirs until they end. Throws (and changes
   * nothing) when the new listener cannot start.
   */
  replaceCertificate(tls: TlsCertificate): void;
  /** From the moment `stop` is called. */
  readonly stopping: boolean;
  stop(timeoutMs: number): Promise<void>;
};

/**
 * Serves `fetch` with one JSON log line per request (method, path, status, duration to headers,
 * request id). The path is logged without its query, which can carry OAuth codes and state.
 */
export function startServer(fetch: Fetch, options: ServerOptions): RunningServer {
  const { log, requestIds } = options;
  const now = options.clock ?? performance.now.bind(performance);
  const logged =
    <R extends Request>(handler: (request: R) => Response | Promise<Response>) =>
    async (request: R, server: Server<undefined>): Promise<Response> => {
      const start = now();
      const id = assignRequestId(request, requestIds);
      const response = await handler(request);
      // An event stream may be quiet for long stretches: no idle timeout for it (Bun's default would cut it).
      if (response.headers.get("content-type")?.startsWith("text/event-stream")) server.timeout(request, 0);
      try {
        response.headers.set("x-request-id", id);
      } catch {
        // Immutable headers (a passed-through upstream response): the log still has the id.
      }
      const url = request.url;
      const pathStart = url.indexOf("/", url.indexOf("//") + 2);
      const queryStart = url.indexOf("?", pathStart);
      log.info("request", {
        method: request.method,
        path: url.slice(pathStart, queryStart < 0 ? undefined : queryStart),
        status: response.status,
        duration_ms: Math.round((now() - start) * 1000) / 1000,
        request_id: id,
      });
      return response;
    };
  const routes = Object.fromEntries(
    Object.entries(options.routes ?? {}).map(([path, methods]) => [
      path,
      Object.fromEntries(Object.entries(methods).map(([method, handler]) => [method, logged(handler)])),
    ]),
  );
  const serveOptions = {
    hostname: options.host,
    maxRequestBodySize: options.maxRequestBodySize,
    idleTimeout: 120,
    routes,
    fetch: logged(fetch),
    // The last resort, for what escaped the handlers: the same problem document as everywhere else.
    error: (error: Error) => errorResponse(error, log),
  };
  // Bun 1.4's `server.reload()` ignores `tls` (it replaces handlers only) and a Bun server has no
  // `setSecureContext`. So a new certificate gets a new listener on the same address (SO_REUSEPORT), and the old
  // listener stops accepting and drains: its open connections — requests in flight, event streams — go on.
  if (options.tls && options.port !== 0) {
    // SO_REUSEPORT would let this start share the port with another process of the same user (a second instance)
    // instead of failing: a plain bind first fails with EADDRINUSE when anything listens there.
    void Bun.serve({ hostname: options.host, port: options.port, fetch: () => new Response(null, { status: 503 }) }).stop(true);
  }
  const listen = (tls: TlsCertificate | undefined, port: number): Server<undefined> =>
    Bun.serve({ ...serveOptions, port, ...(tls && { tls: { cert: tls.cert, key: tls.key }, reusePort: true }) });
  let server = listen(options.tls, options.port);
  /** Listeners replaced by a new certificate, still finishing the connections they had. */
  const draining = new Map<Server<undefined>, Promise<void>>();
  const host = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  let stopping = false;
  return {
    get server() {
      return server;
    },
    get stopping() {
      return stopping;
    },
    url: `${options.tls ? "https" : "http"}://${host}:${server.port}`,
    replaceCertificate(tls) {
      if (!options.tls) throw new Error("this server was started without TLS");
      const next = listen(tls, server.port!);
      const previous = server;
      server = next;
      draining.set(
        previous,
        previous.stop(false).then(() => {
          draining.delete(previous);
        }),
      );
    },
    /** Stops accepting, lets in-flight requests finish, then closes whatever is left after `timeoutMs`. */
    async stop(timeoutMs) {
      stopping = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const forced = new Promise<"forced">((resolve) => {
        timer = setTimeout(() => resolve("forced"), timeoutMs);
      });
      const current = server;
      const outcome = await Promise.race([
        Promise.all([current.stop(false), ...draining.values()]).then(() => "drained" as const),
        forced,
      ]);
      clearTimeout(timer);
      if (outcome === "forced") {
        log.warn("shutdown timeout: closing the connections still open");
        await Promise.all([current, ...draining.keys()].map((listener) => listener.stop(true)));
      }
    },
  };
}
