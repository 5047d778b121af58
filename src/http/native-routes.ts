import { TypeCompiler } from "@sinclair/typebox/compiler";
import { invalidField } from "../http-errors/errors";
import { problemResponse } from "../http-errors/problem";
import { ID, ID_REFUSED } from "./params";
import type { RequestIds } from "./request-id";
import type { NativeEntries, NativeEntry } from "./starting-gate";

export const PROXY_ROUTE = "/api/v1/connectors/:id/mcp";
export const VIRTUAL_MCP_ROUTE = "/api/v1/virtual-servers/:id/mcp";

type RoutedRequest = Request & { params: Record<string, string> };

/** The path id's schema (http/params.ts), compiled once: the check the Elysia routes make of it. */
const validId = TypeCompiler.Compile(ID);

/**
 * The MCP URLs served by Bun's own router, ahead of the Elysia app: their hot paths skip the framework's routing,
 * context and hooks. The same entries (proxy/entry.ts, virtual-servers/mcp-routes.ts) as the Elysia routes that
 * describe them in OpenAPI (and serve them under `app.handle`); each checks what the app's hooks would (cross-site
 * requests, credentials, body limits) itself, and the path's id (decoded by Bun) is checked here against the schema
 * the Elysia routes validate it with, refused with the same 422: a URL answers alike through either.
 */
export function nativeRoutes(entries: NativeEntries, requestIds: RequestIds) {
  /** `answer` for a request whose id the Elysia routes would take; else their 422. */
  const withId =
    (answer: (request: Request, id: string) => Response | Promise<Response>) =>
    async (request: RoutedRequest): Promise<Response> => {
      const id = request.params.id ?? "";
      return validId.Check(id)
        ? answer(request, id)
        : problemResponse(invalidField("params.id", ID_REFUSED), requestIds.get(request));
    };
  const methods = (entry: NativeEntry) => {
    const handle = withId((request, id) => entry.handle(request, id));
    return { POST: handle, GET: handle, DELETE: handle, OPTIONS: withId((request) => entry.preflight(request)) };
  };
  return { [PROXY_ROUTE]: methods(entries.proxy), [VIRTUAL_MCP_ROUTE]: methods(entries.virtual) };
}
