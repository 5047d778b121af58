import type { ProxyEntry } from "./entry";

export const PROXY_ROUTE = "/api/v1/connectors/:id/mcp";

type RoutedRequest = Request & { params: Record<string, string> };

/**
 * The MCP proxy served by Bun's own router, ahead of the Elysia app: the hot path skips the framework. The same
 * entry (entry.ts) as the Elysia routes in routes.ts, which describe it in OpenAPI (and serve it under `app.handle`).
 */
export function proxyNativeRoute(entry: ProxyEntry) {
  const handle = (request: RoutedRequest) => entry.handle(request, request.params.id ?? "");
  const preflight = async (request: RoutedRequest) => entry.preflight(request);
  return { [PROXY_ROUTE]: { POST: handle, GET: handle, DELETE: handle, OPTIONS: preflight } };
}
