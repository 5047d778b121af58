import { InvalidTarget } from "./errors";

/**
 * The protected resources of this authorization server: each connector's MCP proxy URL,
 * `{public URL}/api/v1/connectors/{id}/mcp`, and each virtual server's MCP URL,
 * `{public URL}/api/v1/virtual-servers/{id}/mcp`. A token is good at one of them ([RFC 8707](https://www.rfc-editor.org/rfc/rfc8707)).
 */
const PATHS = { connector: "/api/v1/connectors/", virtualServer: "/api/v1/virtual-servers/" } as const;

/**
 * The one resource a request, a grant and its tokens are for: a connector or a virtual server, the other absent.
 * Spelled as the grant's columns, so a grant row or a request's params is one as it is.
 */
export type Binding =
  { connector_id: string; virtual_server_id?: undefined } | { virtual_server_id: string; connector_id?: undefined };

/** A stored binding (the other column null, or absent from a request kept before virtual servers had tokens). */
export const bindingOf = (row: { connector_id?: string | null; virtual_server_id?: string | null }): Binding =>
  row.virtual_server_id ? { virtual_server_id: row.virtual_server_id } : { connector_id: row.connector_id! };

export const sameBinding = (a: Binding, b: Binding) =>
  a.connector_id === b.connector_id && a.virtual_server_id === b.virtual_server_id;

/** The resource's URL: what the protected resource metadata names and a client sends as `resource`. */
export const resourceOf = (issuer: string, binding: Binding) =>
  binding.virtual_server_id !== undefined
    ? `${issuer}${PATHS.virtualServer}${binding.virtual_server_id}/mcp`
    : `${issuer}${PATHS.connector}${binding.connector_id}/mcp`;

/** The id after `prefix` in `resource`, when it is `{prefix}{id}/mcp`. */
function idAfter(resource: string, prefix: string): string | undefined {
  if (!resource.startsWith(prefix)) return undefined;
  return /^([^/?#]+)\/mcp\/?$/.exec(resource.slice(prefix.length))?.[1];
}

/** What a resource names ([RFC 8707 §2](https://www.rfc-editor.org/rfc/rfc8707#section-2): absolute, no fragment); throws InvalidTarget. */
export function bindingOfResource(issuer: string, resource: string | null): Binding {
  if (!resource)
    throw new InvalidTarget("resource is required: the MCP URL of a connector or a virtual server of this service (RFC 8707)");
  const connector = idAfter(resource, `${issuer}${PATHS.connector}`);
  if (connector !== undefined) return { connector_id: connector };
  const virtualServer = idAfter(resource, `${issuer}${PATHS.virtualServer}`);
  if (virtualServer !== undefined) return { virtual_server_id: virtualServer };
  throw new InvalidTarget(
    `resource must be the MCP URL of a connector (${issuer}${PATHS.connector}{id}/mcp) or of a virtual server (${issuer}${PATHS.virtualServer}{id}/mcp) of this service`,
  );
}
