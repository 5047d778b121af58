import { Elysia, t } from "elysia";
import { OWN_BODY } from "../docs/plugin";
import { Problem } from "../http-errors/model";
import { RELAYED_JSON_BODY } from "../http/json-body";
import { IdParams } from "../http/params";
import type { ProxyEntry } from "./entry";

const detail = (summary: string, description: string) => ({
  summary,
  description:
    `${description} Authenticated like the API; only for a connected connector of the caller. The client's own Authorization and cookies are never forwarded; the connector's stored credentials are. ` +
    "Problems of type oauth-scope-required (403) and oauth-authorization-required (409) mean the connector now waits for the user to open its auth_request.authorization_url; upstream-credentials-revoked (502) that it was disconnected; upstream-answer-refused (502, or the server's 4xx) that the server answered with a redirect or a body other than JSON or an event stream, which is never relayed.",
  tags: ["MCP proxy"],
  // Authenticated in the entry (entry.ts), which also challenges for this service's OAuth.
  security: [{ basic: [] as string[] }, { bearer: [] as string[] }] as Record<string, string[]>[],
  ...OWN_BODY,
});

const options = (summary: string, description: string, body = false) => ({
  params: IdParams,
  // Declared for the docs, never parsed here: the proxy reads it itself, once (message.ts), or streams it unread.
  parse: RELAYED_JSON_BODY,
  ...(body && {
    body: t.Any({
      description:
        "A JSON-RPC message (or batch): checked strictly and sent on re-serialised while the audit trail, tracing or a tool policy reads it, else streamed as sent",
      examples: [
        {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "swagger-ui", version: "1" } },
        },
      ],
    }),
  }),
  response: {
    200: t.Any({ description: "The MCP server's answer: application/json or a text/event-stream, streamed as it comes" }),
    202: t.Any({ description: "Accepted (a notification or response was sent)" }),
    400: t.Any({
      description:
        "A JSON-RPC error with a null id: -32700 for a body that is not strict JSON, -32600 for one that is not a message or disagrees with Mcp-Method/Mcp-Name",
    }),
    401: Problem,
    403: Problem,
    404: Problem,
    409: Problem,
    413: Problem,
    429: Problem,
    502: Problem,
    504: Problem,
  },
  detail: detail(summary, description),
});

export function proxyRoutes(entry: ProxyEntry) {
  return new Elysia({ prefix: "/api/v1/connectors" })
    .post(
      "/:id/mcp",
      ({ params, request }) => entry.handle(request, params.id),
      options(
        "MCP: send a JSON-RPC message",
        "MCP Streamable HTTP POST. Send `Accept: application/json, text/event-stream`.",
        true,
      ),
    )
    .get(
      "/:id/mcp",
      ({ params, request }) => entry.handle(request, params.id),
      options(
        "MCP: open the server's notification stream",
        "MCP Streamable HTTP GET (text/event-stream), resumable with Last-Event-ID.",
      ),
    )
    .delete(
      "/:id/mcp",
      ({ params, request }) => entry.handle(request, params.id),
      options("MCP: end the session", "MCP Streamable HTTP DELETE with Mcp-Session-Id."),
    )
    .options("/:id/mcp", ({ request }) => entry.preflight(request), {
      params: IdParams,
      response: { 204: t.Void({ description: "Allowed: the CORS headers say for how long" }), 403: Problem },
      detail: {
        summary: "CORS preflight of the MCP proxy",
        description: "For browser-based MCP clients; allowed origins are CORS__ALLOWED_ORIGINS. No credentials.",
        tags: ["MCP proxy"],
        security: [],
      },
    });
}
