import { InvalidTarget } from "./errors";

/**
 * The protected resources of this authorization server: each connector's MCP proxy URL,
 * `{public URL}/api/v1/connectors/{id}/mcp`. A token is good at one of them ([RFC 8707](https://www.rfc-editor.org/rfc/rfc8707)).
 */
const proxyPrefix = (issuer: string) => `${issuer}/api/v1/connectors/`;

export const resourceOf = (issuer: string, connectorId: string) => `${proxyPrefix(issuer)}${connectorId}/mcp`;

/** The connector id a resource names ([RFC 8707 §2](https://www.rfc-editor.org/rfc/rfc8707#section-2): absolute, no fragment); throws InvalidTarget. */
export function connectorOfResource(issuer: string, resource: string | null): string {
  if (!resource) throw new InvalidTarget("resource is required: the MCP proxy URL of the connector (RFC 8707)");
  const prefix = proxyPrefix(issuer);
  const match = resource.startsWith(prefix) ? /^([^/?#]+)\/mcp\/?$/.exec(resource.slice(prefix.length)) : null;
  if (!match) throw new InvalidTarget(`resource must be the MCP proxy URL of a connector of this service (${prefix}{id}/mcp)`);
  return match[1]!;
}
