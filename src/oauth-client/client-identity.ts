import * as oauth from "oauth4webapi";
import type { Sealer } from "../secrets/sealer";
import type { OAuthHttp } from "./http";
import { CLIENT_METADATA_PATH, type TokenEndpointAuthMethod } from "./model";
import type { OAuthRepository } from "./repository";
import { clientSeal } from "./sealing";

export type ClientIdentity = {
  client_id: string;
  client_secret: string | null;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
};

export class NoClientIdentity extends Error {}

export type ClientIdentityDeps = {
  http: OAuthHttp;
  repository: OAuthRepository;
  sealer: Sealer;
  clock: () => number;
  publicUrl: () => string;
};

/** The client's token endpoint authentication: a secret goes the way the server prefers ([RFC 8414 §2](https://www.rfc-editor.org/rfc/rfc8414#section-2)). */
function secretMethod(as: oauth.AuthorizationServer): TokenEndpointAuthMethod {
  const supported = as.token_endpoint_auth_methods_supported;
  if (!supported || supported.includes("client_secret_basic")) return "client_secret_basic";
  return supported.includes("client_secret_post") ? "client_secret_post" : "client_secret_basic";
}

export const CLIENT_NAME = "connector-service";

/** Client metadata the service registers ([RFC 7591 §2](https://www.rfc-editor.org/rfc/rfc7591#section-2)) or publishes as its Client ID Metadata Document. */
export function clientMetadata(redirectUri: string): Record<string, string | string[]> {
  return {
    client_name: CLIENT_NAME,
    redirect_uris: [redirectUri],
    // Without refresh_token here, servers issue no refresh token and the connector dies with its first access token.
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
}

/**
 * Client identity in the order of [MCP authorization (2025-11-25) §"Client Registration Approaches"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#client-registration-approaches)
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#client-registration-approaches):
 * the connector's (or preset's) client id → a Client ID Metadata Document when the server supports it and the
 * service has a public https URL → Dynamic Client Registration (RFC 7591), reused per issuer → a clear error.
 */
export async function resolveClient(
  as: oauth.AuthorizationServer,
  given: { client_id: string | null; client_secret: string | null },
  redirectUri: string,
  deps: ClientIdentityDeps,
): Promise<ClientIdentity> {
  if (given.client_id) {
    return {
      client_id: given.client_id,
      client_secret: given.client_secret,
      token_endpoint_auth_method: given.client_secret ? secretMethod(as) : "none",
    };
  }
  const publicUrl = deps.publicUrl();
  if (as.client_id_metadata_document_supported === true && publicUrl.startsWith("https://")) {
    return { client_id: `${publicUrl}${CLIENT_METADATA_PATH}`, client_secret: null, token_endpoint_auth_method: "none" };
  }
  if (as.registration_endpoint) {
    const known = await deps.repository.findClient(as.issuer, redirectUri);
    if (known) {
      return {
        client_id: known.client_id,
        client_secret: known.client_secret ? deps.sealer.open(known.client_secret, clientSeal(as.issuer, redirectUri)) : null,
        token_endpoint_auth_method: known.token_endpoint_auth_method,
      };
    }
    const metadata = clientMetadata(redirectUri);
    const publicClient = !as.token_endpoint_auth_methods_supported || as.token_endpoint_auth_methods_supported.includes("none");
    if (!publicClient) metadata.token_endpoint_auth_method = secretMethod(as);
    const response = await oauth.dynamicClientRegistrationRequest(as, metadata, deps.http.options(as.registration_endpoint));
    const registered = await oauth.processDynamicClientRegistrationResponse(await withSecretExpiry(response));
    const method =
      (registered.token_endpoint_auth_method as TokenEndpointAuthMethod | undefined) ??
      (metadata.token_endpoint_auth_method as TokenEndpointAuthMethod);
    const secret = typeof registered.client_secret === "string" ? registered.client_secret : null;
    await deps.repository.saveClient({
      issuer: as.issuer,
      redirect_uri: redirectUri,
      client_id: registered.client_id,
      client_secret: secret === null ? null : deps.sealer.seal(secret, clientSeal(as.issuer, redirectUri)),
      token_endpoint_auth_method: method,
      created_at: deps.clock(),
    });
    return { client_id: registered.client_id, client_secret: secret, token_endpoint_auth_method: method };
  }
  throw new NoClientIdentity(
    `the authorization server ${as.issuer} offers neither Client ID Metadata Documents (with an https SERVER__PUBLIC_URL) nor Dynamic Client Registration: create the connector with the client_id (and client_secret) registered for it`,
  );
}

/**
 * [RFC 7591 §3.2.1](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.1) requires `client_secret_expires_at` with a secret; servers that omit it mean "never"
 * (the MCP SDKs read it that way). Supplied as 0 so oauth4webapi's checks of everything else still apply.
 */
async function withSecretExpiry(response: Response): Promise<Response> {
  if (!response.ok) return response;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!body || typeof body.client_secret !== "string" || typeof body.client_secret_expires_at === "number") return response;
  return new Response(JSON.stringify({ ...body, client_secret_expires_at: 0 }), {
    status: response.status,
    headers: response.headers,
  });
}

/** application/x-www-form-urlencoded ([WHATWG URL §5.2](https://url.spec.whatwg.org/#application/x-www-form-urlencoded)): what [RFC 6749 §2.3.1](https://www.rfc-editor.org/rfc/rfc6749#section-2.3.1) asks for before Base64. */
const formEncode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);

/**
 * client_secret_basic ([RFC 6749 §2.3.1](https://www.rfc-editor.org/rfc/rfc6749#section-2.3.1)). oauth4webapi's own also escapes unreserved characters such as
 * "-", which servers that do not decode the credentials (several MCP servers) then refuse.
 */
const clientSecretBasic =
  (secret: string): oauth.ClientAuth =>
  (_as, client, _body, headers) => {
    headers.set("authorization", `Basic ${btoa(`${formEncode(client.client_id)}:${formEncode(secret)}`)}`);
  };

/** The client authentication of a token request ([RFC 6749 §2.3](https://www.rfc-editor.org/rfc/rfc6749#section-2.3)), as oauth4webapi takes it. */
export function clientAuth(
  identity: { token_endpoint_auth_method: TokenEndpointAuthMethod },
  secret: string | null,
): oauth.ClientAuth {
  if (identity.token_endpoint_auth_method === "client_secret_post" && secret) return oauth.ClientSecretPost(secret);
  if (identity.token_endpoint_auth_method === "client_secret_basic" && secret) return clientSecretBasic(secret);
  return oauth.None();
}
