import { Elysia, t } from "elysia";
import { Unauthorized } from "../http-errors/errors";
import { OWN_BODY } from "../docs/plugin";
import { Problem } from "../http-errors/model";
import { RELAYED_JSON_BODY, type ApiBodyPlugin } from "../http/json-body";
import { IdParams } from "../http/params";
import { forward, type ForwardOptions } from "../forward/forward";
import { upstreamRequestHeaders } from "../forward/headers";
import type { AccessWatch } from "../users/access-watch";
import type { AuthPlugin } from "../users/auth-plugin";
import type { Principal } from "../users/model";
import type { RequestAuthenticator } from "../users/authenticate";
import { AgentCard, Provider, ProviderList, RegisterProviderBody } from "./model";
import type { ProviderService } from "./service";

const ProviderParams = t.Object({ provider_id: t.String({ format: "uuid", description: "The provider's id (a UUID)" }) });
const problems = { 401: Problem, 403: Problem, 404: Problem, 409: Problem, 422: Problem };

/** Request headers the A2A proxy passes on (A2A 0.3.0 JSON-RPC over HTTP); never the caller's Authorization. */
const A2A_REQUEST_HEADERS = ["accept", "content-type", "accept-encoding", "x-a2a-extensions"];

/** [RFC 9110 §13.1.2](https://www.rfc-editor.org/rfc/rfc9110#section-13.1.2): If-None-Match matches when any listed entity tag (weak or not) is the current one. */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === "*") return true;
  return ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

export function providerRoutes(providers: ProviderService, auth: AuthPlugin, apiBody: ApiBodyPlugin) {
  return new Elysia({ prefix: "/api/v1/providers", detail: { tags: ["Agent providers"] } })
    .use(auth)
    .use(apiBody)
    .post(
      "",
      async ({ principal, body, set }) => {
        const provider = await providers.register(principal, body);
        set.status = 201;
        set.headers.location = `/api/v1/providers/${provider.id}`;
        return provider;
      },
      {
        auth: true,
        body: RegisterProviderBody,
        response: { 201: Provider, 400: Problem, ...problems },
        detail: {
          summary: "Register an agent provider (administrators only)",
          description:
            "By `agent_card_url` (fetched now, with the URL safety check, a 10 s timeout and a 256 KiB cap, and refreshed periodically) or by an inline `agent_card`. The card must be a valid A2A 0.3.0 agent card; a 422 names the first field that is not.",
        },
      },
    )
    .get("", () => providers.list(), {
      auth: true,
      response: { 200: ProviderList, 401: Problem },
      detail: { summary: "List agent providers" },
    })
    .get("/:id", ({ params }) => providers.get(params.id), {
      auth: true,
      params: IdParams,
      response: { 200: Provider, ...problems },
      detail: { summary: "Get an agent provider" },
    })
    .delete(
      "/:id",
      async ({ principal, params, set }) => {
        await providers.delete(principal, params.id);
        set.status = 204;
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void(), ...problems },
        detail: { summary: "Remove an agent provider (administrators only)" },
      },
    )
    .post("/:id/refresh", ({ principal, params }) => providers.refresh(params.id, principal), {
      auth: true,
      params: IdParams,
      response: { 200: Provider, ...problems, 502: Problem },
      detail: {
        summary: "Fetch a URL-registered card again (administrators only)",
        description: "On failure the last good card stays and the provider records why.",
      },
    });
}

export function a2aRoutes(
  providers: ProviderService,
  authenticate: RequestAuthenticator,
  auth: AuthPlugin,
  forwardOptions: ForwardOptions,
  watch: AccessWatch,
) {
  const relay = async ({
    params,
    request,
    principal,
  }: {
    params: { provider_id: string };
    request: Request;
    principal: Principal;
  }) => {
    const target = await providers.agentUrl(params.provider_id);
    const forwarded = await forward(
      request,
      target,
      upstreamRequestHeaders(request.headers, A2A_REQUEST_HEADERS),
      forwardOptions,
    );
    // A message/stream ends when the caller loses access (users/access-watch.ts).
    return forwarded.respond(undefined, watch.of(request, principal));
  };
  const proxyOptions = {
    auth: true as const,
    params: ProviderParams,
    parse: RELAYED_JSON_BODY,
    body: t.Any({
      description: "An A2A JSON-RPC request, passed through as sent",
      examples: [
        {
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              kind: "message",
              role: "user",
              messageId: "0193f4a2-7c1e-7d3a-9b5e-2f6c8d1a4e07",
              parts: [{ kind: "text", text: "What can you do?" }],
            },
          },
        },
      ],
    }),
    response: {
      200: t.Any({ description: "The agent's JSON-RPC answer, or a text/event-stream for message/stream, streamed" }),
      401: Problem,
      404: Problem,
      422: Problem,
      502: Problem,
      504: Problem,
    },
    detail: {
      summary: "A2A: send a JSON-RPC request to the agent",
      description: "The agent card's `url`. Forwarded to the agent's own endpoint, streaming; HTTP Basic (or an API token).",
      ...OWN_BODY,
    },
  };
  return new Elysia({ prefix: "/api/v1/a2a", detail: { tags: ["A2A"] } })
    .use(auth)
    .get(
      "/:provider_id/.well-known/agent-card.json",
      async ({ params, request }) => {
        const authorization = request.headers.get("authorization");
        // docs/interface.md §7: the agent card takes HTTP Basic (RFC 7617) alone, not an API token.
        if (!authorization || !/^basic\s/i.test(authorization))
          throw new Unauthorized("The agent card needs HTTP Basic credentials of a user of this service");
        await authenticate(request);
        const served = await providers.card(params.provider_id);
        const headers = { etag: served.etag, "cache-control": "private, max-age=300", vary: "authorization" };
        if (matches(request.headers.get("if-none-match"), served.etag)) return new Response(null, { status: 304, headers });
        return new Response(served.body, { headers: { ...headers, "content-type": "application/json" } });
      },
      {
        params: ProviderParams,
        response: {
          200: AgentCard,
          304: t.Void({ description: "Not modified (If-None-Match)" }),
          401: Problem,
          404: Problem,
          422: Problem,
        },
        detail: {
          summary: "The agent card of a provider",
          description:
            "A2A 0.3.0 agent card; HTTP Basic required. `url` is this service's A2A proxy for the agent. Sent with an ETag: If-None-Match gives 304.",
          security: [{ basic: [] }],
        },
      },
    )
    .post("/:provider_id", relay, proxyOptions)
    .post("/:provider_id/", relay, { ...proxyOptions, detail: { ...proxyOptions.detail, hide: true } });
}
