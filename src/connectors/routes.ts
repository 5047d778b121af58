import { Elysia, t } from "elysia";
import { Problem } from "../http-errors/model";
import { parseJsonBody } from "../http/json-body";
import type { AuthPlugin } from "../users/auth-plugin";
import { IdParams } from "../users/model";
import { ConnectBody, Connector, ConnectorList, CreateConnectorBody, ListQuery } from "./model";
import type { ConnectionService } from "./connection";
import type { ConnectorService } from "./service";

const problems = { 401: Problem, 404: Problem, 409: Problem, 422: Problem };

export function connectorRoutes(connectors: ConnectorService, connections: ConnectionService, auth: AuthPlugin) {
  return new Elysia({ prefix: "/api/v1/connectors", detail: { tags: ["Connectors"] } })
    .use(auth)
    .onParse(parseJsonBody)
    .post(
      "/",
      ({ principal, body, set }) => {
        const connector = connectors.create(principal, body);
        set.status = 201;
        set.headers.location = `/api/v1/connectors/${connector.id}`;
        return connector;
      },
      {
        auth: true,
        body: CreateConnectorBody,
        response: { 201: Connector, 400: Problem, ...problems },
        detail: {
          summary: "Create a connector",
          description:
            "Registers an MCP server URL. With match_preset (default true) a preset with the same URL supplies client credentials and metadata that the request leaves out.",
        },
      },
    )
    .get("/", ({ principal, query }) => connectors.list(principal, query), {
      auth: true,
      query: ListQuery,
      response: { 200: ConnectorList, ...problems },
      detail: { summary: "List connectors, newest first", description: "Administrators see every user's connectors." },
    })
    .get("/:id", ({ principal, params }) => connectors.get(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: Connector, ...problems },
      detail: { summary: "Get a connector" },
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
        response: { 204: t.Void(), ...problems },
        detail: { summary: "Delete a connector" },
      },
    )
    .post("/:id/connect", ({ principal, params, body }) => connections.connect(principal, params.id, body ?? {}), {
      auth: true,
      params: IdParams,
      body: t.Optional(ConnectBody),
      response: { 200: Connector, 400: Problem, ...problems, 502: Problem, 504: Problem },
      detail: {
        summary: "Connect a connector",
        description:
          "Runs an MCP initialize handshake with the server using `headers` (or none, for an open server). On success the headers are stored sealed, sent with every proxied request, and the connector is `connected`. " +
          "If the server refuses the headers (401/403) the answer is a 422 problem of type upstream-rejected-credentials and the connector is `disconnected` with the reason; an unreachable server is a 502, a silent one a 504. Connecting again starts over.",
      },
    })
    .post("/:id/disconnect", ({ principal, params }) => connections.disconnect(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: Connector, ...problems },
      detail: {
        summary: "Disconnect a connector",
        description: "Forgets its credentials (an OAuth grant is first revoked at the authorization server, RFC 7009); state becomes disconnected.",
      },
    });
}
