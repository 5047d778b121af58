import type { AuthorizationServer } from "oauth4webapi";

export type TokenEndpointAuthMethod = "none" | "client_secret_basic" | "client_secret_post";

/** What a grant needs besides its secrets; stored as JSON (nothing secret in it). */
export type GrantContext = {
  /** Authorization server metadata as discovered (RFC 8414 / OIDC Discovery). */
  as: AuthorizationServer;
  client_id: string;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  /** RFC 8707 resource indicator: the canonical MCP server URL. */
  resource: string;
  scope: string | null;
  redirect_uri: string;
};

export type StateContext = GrantContext & {
  redirect_url: string | null;
  /** The user who started the authorization: only a browser signed in as this user finishes it (callback.ts). */
  started_by?: string;
};

export type StateSecrets = { code_verifier: string; client_secret: string | null };

export type GrantSecrets = { access_token: string; refresh_token: string | null; client_secret: string | null };

/** A pending authorization lives 10 minutes ([RFC 6749 §10.12](https://www.rfc-editor.org/rfc/rfc6749#section-10.12) wants `state` short-lived). */
export const STATE_TTL_MS = 10 * 60 * 1000;

/** The callback path (docs/interface.md §4.5). */
export const CALLBACK_PATH = "/api/v1/connectors/oauth/callback";
/** Where the service publishes its Client ID Metadata Document. */
export const CLIENT_METADATA_PATH = "/api/v1/connectors/oauth/client-metadata.json";
