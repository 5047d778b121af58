import { GRANT_TYPES_SUPPORTED, OAUTH_PATHS } from "./model";
import { resourceOf, type Binding } from "./resource";
import { SCOPES_SUPPORTED } from "./scope";

/** [RFC 8414 §2](https://www.rfc-editor.org/rfc/rfc8414#section-2): what MCP clients read to find the endpoints. */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}${OAUTH_PATHS.authorize}`,
    token_endpoint: `${issuer}${OAUTH_PATHS.token}`,
    registration_endpoint: `${issuer}${OAUTH_PATHS.register}`,
    revocation_endpoint: `${issuer}${OAUTH_PATHS.revoke}`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: GRANT_TYPES_SUPPORTED,
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    scopes_supported: SCOPES_SUPPORTED,
  };
}

/**
 * [RFC 9728 §2](https://www.rfc-editor.org/rfc/rfc9728#section-2): a connector's proxy URL or a virtual server's MCP
 * URL as a protected resource. Served for any id, known or not, so the document tells a stranger nothing.
 */
export function protectedResourceMetadata(issuer: string, binding: Binding) {
  return {
    resource: resourceOf(issuer, binding),
    authorization_servers: [issuer],
    bearer_methods_supported: ["header"],
    scopes_supported: SCOPES_SUPPORTED,
    resource_name:
      binding.virtual_server_id !== undefined
        ? "A virtual server of connector-service (MCP servers joined into one)"
        : "An MCP server through connector-service",
  };
}

/**
 * [RFC 9728 §3.1](https://www.rfc-editor.org/rfc/rfc9728#section-3.1)'s root form, for clients that ask without the
 * resource's path: it names the service itself; tokens are for one connector's proxy URL or one virtual server's MCP URL, whose document the 401 names.
 */
export function rootResourceMetadata(issuer: string) {
  return {
    resource: issuer,
    authorization_servers: [issuer],
    bearer_methods_supported: ["header"],
    scopes_supported: SCOPES_SUPPORTED,
  };
}
