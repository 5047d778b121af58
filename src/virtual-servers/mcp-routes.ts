import { Elysia, t } from "elysia";
import { OWN_BODY } from "../docs/plugin";
import { AppError } from "../http-errors/errors";
import { Problem } from "../http-errors/model";
import { errorResponse } from "../http-errors/problem";
import type { Cors } from "../http/cors";
import { crossSiteRefusal } from "../http/cross-site";
import { mcpChallenge, protectedResourceMetadataUrl } from "../http/mcp-challenge";
import { RELAYED_JSON_BODY } from "../http/json-body";
import { IdParams } from "../http/params";
import type { Logger } from "../observability/logger";
import type { RequestAuthenticator } from "../users/authenticate";
import type { Principal } from "../users/model";
import type { AccessWatch } from "../users/access-watch";
import { heldAnswer } from "../http/held-answer";
import { isModernPost } from "../gateway/era";
import type { VirtualEndpoint } from "./endpoint";

export type VirtualEntryDeps = {
  endpoint: VirtualEndpoint;
  /** The proxy's way in (users/authentication.ts): Basic, API tokens, and access tokens (each for one MCP URL: endpoint.ts). */
  authenticate: RequestAuthenticator;
  publicUrl: () => string;
  log: Logger;
  requestId: (request: Request) => string | undefined;
  cors: Cors;
  /**
   * Serves a 2026-07-28 request (no session) over a 2025 session of this virtual server that the caller's bridge
   * keeps (era-bridge/bridges.ts, wired by app.ts): the endpoint itself speaks the 2025 session eras.
   */
  modern?: (caller: Principal, id: string, request: Request) => Promise<Response>;
  /** Ends an event stream whose caller lost access (users/access-watch.ts), as the proxy's are. */
  watch?: AccessWatch;
};

const METHODS = "POST, GET, DELETE";

/** Where a virtual server's MCP URL publishes its protected resource metadata (http/mcp-challenge.ts). */
export const virtualResourceMetadataUrl = (publicUrl: string, id: string) =>
  protectedResourceMetadataUrl(publicUrl, `/api/v1/virtual-servers/${encodeURIComponent(id)}/mcp`);

/**
 * One request at a virtual server's MCP URL: authenticated like a connector's proxy URL (proxy/entry.ts), then
 * answered by the endpoint, or a problem. A 401 challenges for a Bearer token from this service's authorization
 * server, named by the resource metadata URL ([RFC 9728 §5.1](https://www.rfc-editor.org/rfc/rfc9728#section-5.1),
 * MCP authorization: OAuth by URL alone), which an API token also answers, and for HTTP Basic (programs only).
 */
export function virtualEntry(deps: VirtualEntryDeps) {
  // The public URL's origin, parsed again only when the URL changes (as proxy/entry.ts keeps it).
  let publicUrl = "";
  let publicOrigin = "";
  const originOf = (url: string) => {
    if (url !== publicUrl) [publicUrl, publicOrigin] = [url, new URL(url).origin];
    return publicOrigin;
  };
  const answer = async (request: Request, id: string): Promise<Response> => {
    try {
      const refusal = crossSiteRefusal(request, originOf(deps.publicUrl()), "cross-origin");
      if (refusal) throw refusal;
      const caller = await deps.authenticate(request);
      const { watch } = deps;
      // An event stream (a session's GET stream, a call's, a 2026-07-28 subscriptions/listen) lasts: it ends when the
      // caller loses access, as the proxy's do.
      const watched = (response: Response) => heldAnswer(response, () => undefined, watch?.of(request, caller));
      if (deps.modern && isModernPost(request)) {
        // Checked for every request with the caller as it is now: the bridge's session was opened by an earlier one.
        await deps.endpoint.check(caller, id);
        return watched(await deps.modern(caller, id, request));
      }
      return watched(await deps.endpoint.handle(caller, id, request));
    } catch (error) {
      const response = errorResponse(error, deps.log, deps.requestId(request));
      if (response.status === 401)
        response.headers.set(
          "www-authenticate",
          mcpChallenge(request, virtualResourceMetadataUrl(deps.publicUrl(), id), {
            // A token refused (expired, revoked, or for another resource) is an invalid_token.
            invalidToken: error instanceof AppError && error.type === "invalid-token",
            realm: true,
          }),
        );
      return response;
    }
  };
  return {
    handle: async (request: Request, id: string) => deps.cors.decorate(request, await answer(request, id)),
    preflight: (request: Request) => deps.cors.preflight(request, METHODS),
  };
}
export type VirtualEntry = ReturnType<typeof virtualEntry>;

const detail = (summary: string, description: string) => ({
  summary,
  description: `${description} Authenticated like a connector's proxy URL: HTTP Basic, API tokens, and OAuth by URL alone — a 401 names this URL's protected resource metadata (RFC 9728), whose authorization server is this service; the access token it issues for this URL (RFC 8707 resource, the virtual server's owner or an administrator consenting) is good here only, not at a member's proxy URL, another virtual server or the API. Each member is reached through its own proxy URL as the caller, so its state, credentials, tool policy and audit apply. See docs/interface.md §9.4.`,
  tags: ["Virtual servers"],
  security: [{ basic: [] as string[] }, { bearer: [] as string[] }] as Record<string, string[]>[],
  ...OWN_BODY,
});

const answers = {
  400: t.Any({
    description:
      "A JSON-RPC error with a null id (-32700, -32600), or a problem: no Mcp-Session-Id, an unsupported MCP-Protocol-Version",
  }),
  401: Problem,
  404: t.Any({
    description: "No such virtual server (a problem), or an unknown Mcp-Session-Id (a JSON-RPC error): initialize again",
  }),
  413: Problem,
};

/** `/api/v1/virtual-servers/{id}/mcp`: MCP Streamable HTTP (2025-06-18, 2025-11-25). */
export function virtualMcpRoutes(entry: VirtualEntry) {
  return (
    new Elysia({ prefix: "/api/v1/virtual-servers" })
      .post("/:id/mcp", ({ params, request }) => entry.handle(request, params.id), {
        params: IdParams,
        // Declared for the docs, never parsed here: the endpoint reads the message itself.
        parse: RELAYED_JSON_BODY,
        body: t.Any({
          description: "One JSON-RPC message (no batches)",
          examples: [
            {
              jsonrpc: "2.0",
              id: 1,
              method: "initialize",
              params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "swagger-ui", version: "1" } },
            },
          ],
        }),
        response: {
          200: t.Any({
            description:
              "application/json, or a text/event-stream for a call with messages before its answer (progress, a member's requests), then its answer. initialize answers with Mcp-Session-Id",
          }),
          202: t.Any({ description: "Accepted (a notification or a response)" }),
          ...answers,
        },
        detail: detail(
          "Virtual server MCP: send a JSON-RPC message",
          "MCP Streamable HTTP POST. initialize opens a session of the virtual server (capabilities tools, prompts, resources, with listChanged and resource subscriptions); tools/list, prompts/list, resources/list and resources/templates/list merge the members' lists (each member's pages followed, ordered by name, in pages of 100 with this service's cursors: a foreign cursor is -32602); tools/call, prompts/get, resources/read, resources/subscribe and resources/unsubscribe go to the one member whose name or URI it is (-32602 for a name not listed, hidden or unknown alike). A member's elicitation, sampling and roots requests during a call come on the call's event stream with this server's ids; the client POSTs its answers (202), and its notifications/cancelled reaches the one member serving the request.",
        ),
      })
      // MCP 2025-11-25 basic/transports "Listening for Messages from the Server": the session's event stream.
      .get("/:id/mcp", ({ params, request }) => entry.handle(request, params.id), {
        params: IdParams,
        response: {
          200: t.Any({
            description:
              "text/event-stream: the members' notifications/{tools,prompts,resources}/list_changed (coalesced) and notifications/resources/updated, and their requests outside a call",
          }),
          // A problem: this session's GET stream is open already (one per session).
          409: Problem,
          ...answers,
        },
        detail: detail(
          "Virtual server MCP: listen for server messages",
          "MCP Streamable HTTP GET with Mcp-Session-Id and Accept: text/event-stream opens the session's event stream, one per session; while it is open each member's own GET stream is held open too.",
        ),
      })
      .delete("/:id/mcp", ({ params, request }) => entry.handle(request, params.id), {
        params: IdParams,
        response: { 204: t.Void({ description: "The session and its members' sessions ended" }), ...answers },
        detail: detail(
          "Virtual server MCP: end the session",
          "MCP Streamable HTTP DELETE with Mcp-Session-Id: each member's upstream session is ended too.",
        ),
      })
      .options("/:id/mcp", ({ request }) => entry.preflight(request), {
        params: IdParams,
        response: { 204: t.Void({ description: "Allowed: the CORS headers say for how long" }), 403: Problem },
        detail: {
          summary: "CORS preflight of a virtual server's MCP URL",
          description: "For browser-based MCP clients; allowed origins are CORS__ALLOWED_ORIGINS. No credentials.",
          tags: ["Virtual servers"],
          security: [],
        },
      })
  );
}
