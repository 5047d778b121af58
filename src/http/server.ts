import type { Server } from "bun";
import { errorResponse } from "../http-errors/problem";
import type { Logger } from "../observability/logger";
import { assignRequestId, type RequestIds } from "./request-id";

export type Fetch = (request: Request) => Response | Promise<Response>;
/** Bun's native routes (`path` → method → handler) served ahead of `fetch`. */
export type NativeRoutes = Record<string, Partial<Record<"GET" | "POST" | "DELETE" | "OPTIONS", (request: Request & { params: Record<string, string> }) => Promise<Response>>>>;

export type ServerOptions = {
  routes?: NativeRoutes;
  host: string;
  port: number;
  /** Bun's own cap on a request body, a backstop above the limits the API and the relays enforce themselves. */
  maxRequestBodySize: number;
  log: Logger;
  requestIds: RequestIds;
  /** Where each request's client address is recorded, for limits per client. */
  clientAddresses?: WeakMap<Request, string>;
  clock?: () => number;
};

export type RunningServer = { server: Server<undefined>; url: string; stop(timeoutMs: number): Promise<void> };

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
      const client = server.requestIP(request)?.address;
      if (client) options.clientAddresses?.set(request, client);
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
  const server = Bun.serve({
    hostname: options.host,
    port: options.port,
    maxRequestBodySize: options.maxRequestBodySize,
    idleTimeout: 120,
    routes,
    fetch: logged(fetch),
    // The last resort, for what escaped the handlers: the same problem document as everywhere else.
    error: (error) => errorResponse(error, log),
  });
  return {
    server,
    url: `http://${server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname}:${server.port}`,
    /** Stops accepting, lets in-flight requests finish, then closes whatever is left after `timeoutMs`. */
    async stop(timeoutMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const forced = new Promise<"forced">((resolve) => {
        timer = setTimeout(() => resolve("forced"), timeoutMs);
      });
      const outcome = await Promise.race([server.stop(false).then(() => "drained" as const), forced]);
      clearTimeout(timer);
      if (outcome === "forced") {
        log.warn("shutdown timeout: closing the connections still open");
        await server.stop(true);
      }
    },
  };
}
