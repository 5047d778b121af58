import type { Server } from "bun";
import { bodyTooLarge } from "../http-errors/errors";
import { problemResponse, toProblem } from "../http-errors/plugin";
import type { Logger } from "../observability/logger";

export type Fetch = (request: Request) => Response | Promise<Response>;
/** Bun's native routes (`path` → method → handler) served ahead of `fetch`. */
export type NativeRoutes = Record<string, Partial<Record<"GET" | "POST" | "DELETE", (request: Request & { params: Record<string, string> }) => Promise<Response>>>>;
export type RequestIds = WeakMap<Request, string>;

export type ServerOptions = {
  routes?: NativeRoutes;
  host: string;
  port: number;
  maxRequestBodySize: number;
  log: Logger;
  requestIds: RequestIds;
  clock?: () => number;
};

export type RunningServer = { server: Server<undefined>; url: string; stop(timeoutMs: number): Promise<void> };

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
      const incoming = request.headers.get("x-request-id");
      const id = incoming && INCOMING_ID.test(incoming) ? incoming : crypto.randomUUID();
      requestIds.set(request, id);
      const declared = Number(request.headers.get("content-length") ?? 0);
      // Checked here rather than by Bun's own limit, whose 413 has no body: every refusal is a problem document.
      const response =
        declared > options.maxRequestBodySize
          ? problemResponse(toProblem(bodyTooLarge(options.maxRequestBodySize, "PROXY__MAX_BODY_BYTES"), `urn:request:${id}`))
          : await handler(request);
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
    // Bodies without a declared length are counted as they stream (proxy/forward.ts); Bun's cap is a backstop.
    maxRequestBodySize: options.maxRequestBodySize * 4,
    idleTimeout: 120,
    routes,
    fetch: logged(fetch),
    error(error) {
      log.error("request failed outside the app", { error: error.message });
      return new Response(JSON.stringify({ type: "/problems/internal", title: "Internal error", status: 500, detail: "The service failed to handle the request" }), {
        status: 500,
        headers: { "content-type": "application/problem+json" },
      });
    },
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
