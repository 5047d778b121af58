import { Elysia, t } from "elysia";
import {
  ApproveToolsBody,
  ConnectBody,
  Connector,
  ConnectorList,
  CreateConnectorBody,
  ServerToolList,
  ToolChangeList,
  UpdateConnectorBody,
} from "../connectors/model";
import type { ConnectorService } from "../connectors/service";
import { OPTIONAL_BODY } from "../docs/plugin";
import { Problem } from "../http-errors/model";
import type { ApiBodyPlugin } from "../http/json-body";
import { ListQuery } from "../http/pages";
import { IdParams } from "../http/params";
import type { AuthPlugin } from "../users/auth-plugin";
import type { Principal } from "../users/model";
import type { ConnectionService } from "./connections";

/** The server's tools before the tool policy, by an MCP session through the proxy (app.ts wires proxy/server-tools.ts). */
export type ServerTools = (caller: Principal, id: string) => Promise<ServerToolList>;

const connectorProblems = { 401: Problem, 404: Problem, 409: Problem, 422: Problem };

/**
 * The connector resource, `/api/v1/connectors`: create, list, read, change and delete a connector, approve its tools,
 * and connect or disconnect it. Reading and the records are `connectors/` (the proxy and the OAuth client use them
 * too); connecting, disconnecting and deleting are `connections.ts`, which reaches the OAuth client and the runtime.
 */
export function connectorRoutes(
  connectors: ConnectorService,
  connections: ConnectionService,
  serverTools: ServerTools,
  auth: AuthPlugin,
  apiBody: ApiBodyPlugin,
) {
  return new Elysia({ prefix: "/api/v1/connectors", detail: { tags: ["Connectors"] } })
    .use(auth)
    .use(apiBody)
    .post(
      "",
      async ({ principal, body, set }) => {
        const connector = await connectors.create(principal, body);
        set.status = 201;
        set.headers.location = `/api/v1/connectors/${connector.id}`;
        return connector;
      },
      {
        auth: true,
        body: CreateConnectorBody,
        response: { 201: Connector, 400: Problem, ...connectorProblems },
        detail: {
          summary: "Create a connector",
          description:
            "Registers an MCP server URL. With match_preset (default true) a preset with the same URL supplies client credentials and metadata that the request leaves out.",
        },
      },
    )
    .get("", ({ principal, query }) => connectors.list(principal, query), {
      auth: true,
      query: ListQuery,
      response: { 200: ConnectorList, ...connectorProblems },
      detail: { summary: "List connectors, newest first", description: "Administrators see every user's connectors." },
    })
    .get("/:id", ({ principal, params }) => connectors.get(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: Connector, ...connectorProblems },
      detail: { summary: "Get a connector" },
    })
    .get("/:id/tools", ({ principal, params }) => serverTools(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: ServerToolList, ...connectorProblems, 502: Problem, 504: Problem },
      detail: {
        summary: "List the server's tools, before the tool policy",
        description:
          "Every page of the connected server's `tools/list`, as the server names and describes its tools: those the tool policy or strict pinning hide are there too (this is what the policy is written against; clients at the proxy URL see the policy's view). One MCP session through the proxy, so the connector's credentials, refresh and audit apply: 409 when the connector is not connected, 502/504 when the server fails or is silent.",
      },
    })
    .get("/:id/tools/changes", ({ principal, params }) => connectors.toolChanges(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: ToolChangeList, ...connectorProblems },
      detail: {
        summary: "Compare changed tools with their approved definitions",
        description:
          "With tool pinning: each tool of `tool_changes` with the definition a person approved (`approved`, null for a tool added since the first listing) and the one the server lists now (`current`), by name. Approve with POST …/tools/approve.",
      },
    })
    .post("/:id/tools/approve", ({ principal, params, body }) => connectors.approveTools(principal, params.id, body?.names), {
      auth: true,
      params: IdParams,
      body: t.Optional(ApproveToolsBody),
      response: { 200: Connector, ...connectorProblems },
      detail: {
        ...OPTIONAL_BODY,
        summary: "Approve changed tool definitions",
        description:
          "With tool pinning: the current definitions of `names` (the server's tool names; all changed tools without a body) become the approved ones; under strict pinning they are listed and callable again.",
      },
    })
    .delete(
      "/:id",
      async ({ principal, params, set }) => {
        await connections.delete(principal, params.id);
        set.status = 204;
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void(), ...connectorProblems },
        detail: {
          summary: "Delete a connector",
          description: "An OAuth grant is revoked at the authorization server first (RFC 7009); a managed deployment is removed.",
        },
      },
    )
    .patch("/:id", ({ principal, params, body }) => connections.update(principal, params.id, body), {
      auth: true,
      params: IdParams,
      body: UpdateConnectorBody,
      response: { 200: Connector, ...connectorProblems, 502: Problem, 504: Problem },
      detail: {
        summary: "Change a connector's URL, metadata, tool policy or rate limits, or replace its headers",
        description:
          "`url` moves the connector to another MCP server: the URL is checked as at creation (422: scheme, credentials, fragment, a blocked address, an mcp+stdio:// URL without its preset) and matched against the presets again; a different URL ends the connection in the same write — the connector becomes `disconnected` with the reason (a never-connected one stays `created`), an OAuth grant is revoked at the authorization server and forgotten, stored headers are forgotten, a pending authorization is dropped — and it needs a new connect. OAuth client credentials stay only when the new URL has the same origin (a preset of the new URL supplies its own). The same URL changes nothing. " +
          '`metadata` fields replace the stored ones (the others stay). `tool_policy` replaces the policy (null removes it); `rate_limits` replaces the rate limits (null removes them; docs/behaviour.md "Rate limits"). `headers` (only for a connector connected with headers, else 409) are proven with an MCP handshake before they replace the stored ones: refused (422) or unreachable (502/504), the old headers stay and the connector stays connected.',
      },
    })
    .post("/:id/connect", ({ principal, params, body }) => connections.connect(principal, params.id, body ?? {}), {
      auth: true,
      params: IdParams,
      body: t.Optional(ConnectBody),
      response: { 200: Connector, 400: Problem, ...connectorProblems, 502: Problem, 504: Problem },
      detail: {
        ...OPTIONAL_BODY,
        summary: "Connect a connector",
        description:
          "Runs an MCP initialize handshake with the server using `headers` (or none, for an open server). On success the headers are stored sealed, sent with every proxied request, and the connector is `connected`. " +
          "If the server refuses the headers (401/403) the answer is a 422 problem of type upstream-rejected-credentials and the connector is `disconnected` with the reason; an unreachable server is a 502, a silent one a 504. " +
          "A server that answers 401 to a connect without headers starts the OAuth flow: the connector is `auth_required` and `auth_request.authorization_url` is the link for the user; when it cannot start, the problem's type says why (oauth-client-required, oauth-discovery-failed, oauth-server-unreachable, oauth-request-rejected). Connecting again starts over.",
      },
    })
    .post("/:id/disconnect", ({ principal, params }) => connections.disconnect(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: Connector, ...connectorProblems },
      detail: {
        summary: "Disconnect a connector",
        description:
          "Forgets its credentials (an OAuth grant is first revoked at the authorization server, RFC 7009); state becomes disconnected.",
      },
    });
}
