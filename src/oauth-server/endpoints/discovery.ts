import { Elysia } from "elysia";
import { IdParams } from "../../http/params";
import { JsonDocument } from "../model";
import { oauthJson } from "../responses";
import type { AuthServerEndpointDeps } from "./deps";

/** The discovery documents MCP clients read first: where to sign a person in, for which resource. */
export function discoveryRoutes({ server, json }: AuthServerEndpointDeps) {
  /** [RFC 8414 §3](https://www.rfc-editor.org/rfc/rfc8414#section-3). */
  const authorizationServer = json(() => oauthJson(server.metadata()));
  /**
   * [RFC 9728 §3](https://www.rfc-editor.org/rfc/rfc9728#section-3), at the path of a connector's proxy URL or a
   * virtual server's MCP URL ([§3.1](https://www.rfc-editor.org/rfc/rfc9728#section-3.1): the resource's path after the
   * well-known prefix). Any id is answered, known or not: the document tells a stranger nothing of what exists.
   */
  const connectorResource = json(({ params }: { request: Request; params: { id: string } }) =>
    oauthJson(server.resourceMetadata({ connector_id: params.id })),
  );
  const virtualServerResource = json(({ params }: { request: Request; params: { id: string } }) =>
    oauthJson(server.resourceMetadata({ virtual_server_id: params.id })),
  );
  const rootResource = json(() => oauthJson(server.rootResourceMetadata()));

  return new Elysia({ detail: { tags: ["Authorization server"] } })
    .get("/.well-known/oauth-authorization-server", authorizationServer, {
      response: { 200: JsonDocument },
      detail: {
        summary: "Authorization server metadata (RFC 8414)",
        description:
          "Where MCP clients find the endpoints to sign a person in for a connector's proxy URL or a virtual server's MCP URL. Not OpenID Connect: there is no ID token, so /.well-known/openid-configuration is a 404.",
      },
    })
    .get("/.well-known/oauth-protected-resource/api/v1/connectors/:id/mcp", connectorResource, {
      params: IdParams,
      response: { 200: JsonDocument },
      detail: {
        summary: "Protected resource metadata of a connector's proxy URL (RFC 9728)",
        description: "Names this service as the authorization server.",
      },
    })
    .get("/.well-known/oauth-protected-resource/api/v1/virtual-servers/:id/mcp", virtualServerResource, {
      params: IdParams,
      response: { 200: JsonDocument },
      detail: {
        summary: "Protected resource metadata of a virtual server's MCP URL (RFC 9728)",
        description:
          "Names this service as the authorization server; the tokens it issues for this resource are good at this virtual server's MCP URL only. Answered for any id.",
      },
    })
    .get("/.well-known/oauth-protected-resource", rootResource, {
      response: { 200: JsonDocument },
      detail: {
        summary: "Protected resource metadata, root form",
        description:
          "Tokens are for one connector's proxy URL or one virtual server's MCP URL: read the path-specific document the 401 names.",
      },
    });
}
