import { ServiceUnavailable } from "../http-errors/errors";
import { problemResponse } from "../http-errors/problem";
import type { RequestIds } from "./request-id";
import type { Fetch } from "./server";

/** How long a request that arrives while the service starts waits for it, before a 503 with Retry-After. */
export const STARTING_HOLD_MS = 10_000;

/**
 * What one of Bun's native routes calls, ahead of `fetch` (http/native-routes.ts): a request with its path's id, and a
 * CORS preflight, answered at once.
 */
export type NativeEntry = { handle(request: Request, id: string): Promise<Response>; preflight(request: Request): Response };
/** The native routes' entries: a connector's MCP proxy URL (proxy/entry.ts), a virtual server's (virtual-servers/mcp-routes.ts). */
export type NativeEntries = { proxy: NativeEntry; virtual: NativeEntry };

type Started = { fetch: Fetch; native: NativeEntries };

/**
 * What the listener serves while the service starts. `GET /healthz` answers 200 at once (the process is up) and
 * `GET /readyz` 503 (not ready) — the app's own routes once it is built (`health`), which its readiness keeps at 503
 * until the start is done. Every other request waits for the service to start — the app built, the administrator
 * created — and then is served as usual. One that waits longer than `holdMs`, or whose start fails, is a 503 problem
 * with Retry-After: never an answer from a service half made.
 */
export function startingGate(requestIds: RequestIds, holdMs: number) {
  let started: Started | undefined;
  let app: Fetch | undefined;
  let settle!: (value: Started | undefined) => void;
  const opened = new Promise<Started | undefined>((resolve) => (settle = resolve));
  const notReady = (request: Request, detail: string) => problemResponse(new ServiceUnavailable(detail), requestIds.get(request));
  const notYet = (request: Request) =>
    problemResponse(
      Object.assign(new ServiceUnavailable("The service is starting: try again in a moment"), {
        headers: { "retry-after": "1" },
      }),
      requestIds.get(request),
    );
  /** The started service, or the 503 to answer with. */
  async function wait(request: Request): Promise<Started | Response> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), holdMs)));
    const outcome = await Promise.race([opened, timeout]);
    clearTimeout(timer);
    if (outcome === "timeout") return notYet(request);
    return outcome ?? notReady(request, "The service could not start");
  }
  const through = (route: keyof NativeEntries): NativeEntry => ({
    handle: async (request, id) => {
      const service = started ?? (await wait(request));
      return service instanceof Response ? service : service.native[route].handle(request, id);
    },
    // A CORS preflight is answered at once (its answer is synchronous): before the start, not yet.
    preflight: (request) => (started ? started.native[route].preflight(request) : notYet(request)),
  });
  const native: NativeEntries = { proxy: through("proxy"), virtual: through("virtual") };
  return {
    fetch(request: Request): Response | Promise<Response> {
      if (started) return started.fetch(request);
      if (request.method === "GET") {
        const path = new URL(request.url).pathname;
        if (app && (path === "/healthz" || path === "/readyz")) return app(request);
        if (path === "/healthz") return Response.json({ status: "ok" });
        if (path === "/readyz") return notReady(request, "The service is starting");
      }
      return wait(request).then((service) => (service instanceof Response ? service : service.fetch(request)));
    },
    native,
    /** The app is built: it answers the health checks from now on (its first requests compile its handlers). */
    health(built: Fetch): void {
      app = built;
    },
    open(service: Started): void {
      started = service;
      settle(service);
    },
    fail(): void {
      settle(undefined);
    },
  };
}
