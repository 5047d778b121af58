import { fromBrowser } from "./cross-site";

/**
 * Where an MCP URL of this service publishes its protected resource metadata
 * ([RFC 9728 §3.1](https://www.rfc-editor.org/rfc/rfc9728#section-3.1): the resource's path inserted after the
 * well-known prefix). `path` is the MCP URL's path, its ids encoded.
 */
export const protectedResourceMetadataUrl = (publicUrl: string, path: string) =>
  `${publicUrl}/.well-known/oauth-protected-resource${path}`;

/**
 * The `WWW-Authenticate` of a 401 at an MCP URL: a Bearer token from this service's authorization server, named by the
 * resource metadata URL ([RFC 9728 §5.1](https://www.rfc-editor.org/rfc/rfc9728#section-5.1), MCP authorization),
 * `error="invalid_token"` for a token refused ([RFC 6750 §3.1](https://www.rfc-editor.org/rfc/rfc6750#section-3.1)),
 * and HTTP Basic for programs only: a browser would cache what the person types and send it by itself
 * (http/cross-site.ts).
 */
export function mcpChallenge(
  request: Request,
  metadataUrl: string,
  { invalidToken = false, realm = false }: { invalidToken?: boolean; realm?: boolean } = {},
): string {
  const invalid = invalidToken ? ', error="invalid_token"' : "";
  const basic = fromBrowser(request) ? "" : ', Basic realm="connector-service", charset="UTF-8"';
  return `Bearer resource_metadata="${metadataUrl}"${realm ? ', realm="connector-service"' : ""}${invalid}${basic}`;
}
