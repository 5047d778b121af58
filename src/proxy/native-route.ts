import { errorResponse } from "../http-errors/problem";
import type { RequestIds } from "../http/request-id";
import type { Logger } from "../observability/logger";
import type { RequestAuthenticator } from "../users/authenticate";
import type { ProxyService } from "./service";

export const PROXY_ROUTE = "/api/v1/connectors/:id/mcp";

type RoutedRequest = Request & { params: Record<string, string> };

/**
 * The MCP proxy served by Bun's own router, ahead of the Elysia app: the hot path skips the framework.
 * Same authentication, the same service call and the same problem rendering as the Elysia routes in
 * routes.ts, which describe it in OpenAPI (and serve it under `app.handle`).
 */
export function proxyNativeRoute(proxy: ProxyService, authenticate: RequestAuthenticator, log: Logger, requestIds: RequestIds) {
  const handle = async (request: RoutedRequest): Promise<Response> => {
    try {
      const principal = await authenticate(request);
      return await proxy.handle(principal, request.params.id ?? "", request);
    } catch (error) {
      return errorResponse(error, log, requestIds.get(request));
    }
  };
  return { [PROXY_ROUTE]: { POST: handle, GET: handle, DELETE: handle } };
}
