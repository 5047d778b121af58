import type { NativeEntries, NativeEntry } from "./starting-gate";

export const PROXY_ROUTE = "/api/v1/connectors/:id/mcp";
export const VIRTUAL_MCP_ROUTE = "/api/v1/virtual-servers/:id/mcp";

type RoutedRequest = Request & { params: Record<string, string> };

const methods = (entry: NativeEntry) => {
  const handle = (request: RoutedRequest) => entry.handle(request, request.params.id ?? "");
  const preflight = async (request: RoutedRequest) => entry.preflight(request);
  return { POST: handle, GET: handle, DELETE: handle, OPTIONS: preflight };
};

/**
 * The MCP URLs served by Bun's own router, ahead of the Elysia app: their hot paths skip the framework's routing,
 * context and hooks. The same entries (proxy/entry.ts, virtual-servers/mcp-routes.ts) as the Elysia routes that
 * describe them in OpenAPI (and serve them under `app.handle`); each checks what the app's hooks would (cross-site
 * requests, credentials, body limits) itself. Bun decodes the path's id; an id that is not one of ours is unknown.
 */
export const nativeRoutes = (entries: NativeEntries) => ({
  [PROXY_ROUTE]: methods(entries.proxy),
  [VIRTUAL_MCP_ROUTE]: methods(entries.virtual),
});
