import { Elysia, t } from "elysia";
import { OPTIONAL_BODY } from "../docs/plugin";
import { Problem } from "../http-errors/model";
import type { ApiBodyPlugin } from "../http/json-body";
import { IdParams } from "../http/params";
import type { AuthPlugin } from "../users/auth-plugin";
import { ApproveToolsBody, Connector, ConnectorList, CreateConnectorBody, ListQuery } from "./model";
import type { ConnectorService } from "./service";

export const connectorProblems = { 401: Problem, 404: Problem, 409: Problem, 422: Problem };

/** Create, list and read connectors. Connect, disconnect and delete are in connections/routes.ts. */
export function connectorRoutes(connectors: ConnectorService, auth: AuthPlugin, apiBody: ApiBodyPlugin) {
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
    });
}
