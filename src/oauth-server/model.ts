import { t } from "elysia";
import type { Binding } from "./resource";

/** Where the authorization server's endpoints live, under the service's public URL. */
export const OAUTH_PATHS = {
  authorize: "/oauth/authorize",
  token: "/oauth/token",
  register: "/oauth/register",
  revoke: "/oauth/revoke",
} as const;

/** Lifetimes. Access tokens are short: a revoked grant or a deleted connector is refused at once anyway. */
export const ACCESS_TOKEN_TTL_MS = 15 * 60_000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3_600_000;
/** [RFC 6749 §4.1.2](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2): codes are short-lived (10 minutes at most); one is plenty. */
export const CODE_TTL_MS = 60_000;
/** How long a person has between the authorization request and their consent. */
export const REQUEST_TTL_MS = 10 * 60_000;
/** A person's authorization requests kept between sign-in and consent, at most: a new one makes the oldest go. */
export const MAX_PENDING_REQUESTS_PER_USER = 10;
/** Each parameter of an authorization request is at most this long, so what is kept of one stays small. */
export const MAX_PARAMETER_LENGTH = 2048;
/** A registered client that never got a token is forgotten after this. */
export const UNUSED_CLIENT_TTL_MS = 24 * 3_600_000;
/** Client ID Metadata Documents: fetched with these caps, and fetched again after `METADATA_DOCUMENT_TTL_MS`. */
export const METADATA_DOCUMENT_MAX_BYTES = 16 * 1024;
export const METADATA_DOCUMENT_TIMEOUT_MS = 5_000;
export const METADATA_DOCUMENT_TTL_MS = 3_600_000;

/** [RFC 8414 §2](https://www.rfc-editor.org/rfc/rfc8414#section-2) grant types: the ones the token endpoint answers (token.ts), as every client is registered. */
export const GRANT_TYPES_SUPPORTED = ["authorization_code", "refresh_token"] as const;

/** Prefixes that tell the proxy's authentication which kind of bearer token it holds. */
export const ACCESS_TOKEN_PREFIX = "csa_";
export const REFRESH_TOKEN_PREFIX = "csr_";

/** What the service keeps of a client's metadata ([RFC 7591 §2](https://www.rfc-editor.org/rfc/rfc7591#section-2)), all it shows or checks. */
export type ClientMetadata = {
  redirect_uris: string[];
  client_name?: string;
  client_uri?: string;
  software_id?: string;
  software_version?: string;
};

/**
 * An authorization request as validated at the authorization endpoint, kept until the person answers; its Binding is
 * the connector or virtual server whose MCP URL is the `resource`.
 */
export type AuthorizationParams = Binding & {
  client_id: string;
  redirect_uri: string;
  state: string | null;
  code_challenge: string;
  /** The scope to be granted (scope.ts: only what the server knows), not the one asked for. */
  scope: string | null;
};

const Uri = t.String({ minLength: 1, maxLength: 2048 });

/** A registration request ([RFC 7591 §3.1](https://www.rfc-editor.org/rfc/rfc7591#section-3.1)): only public clients with the code flow are registered here. */
export const RegistrationBody = t.Object(
  {
    redirect_uris: t.Array(Uri, { minItems: 1, maxItems: 10 }),
    client_name: t.Optional(t.String({ maxLength: 200 })),
    client_uri: t.Optional(Uri),
    logo_uri: t.Optional(Uri),
    software_id: t.Optional(t.String({ maxLength: 200 })),
    software_version: t.Optional(t.String({ maxLength: 100 })),
    token_endpoint_auth_method: t.Optional(t.Literal("none", { description: "Only public clients (PKCE) are registered" })),
    grant_types: t.Optional(t.Array(t.Union(GRANT_TYPES_SUPPORTED.map((type) => t.Literal(type))), { maxItems: 2 })),
    response_types: t.Optional(t.Array(t.Literal("code"), { maxItems: 1 })),
    scope: t.Optional(t.String({ maxLength: 500 })),
  },
  // RFC 7591 §2: a server ignores metadata it does not understand.
  { additionalProperties: true },
);
export type RegistrationBody = typeof RegistrationBody.static;

/*
 * How the endpoints document their answers in OpenAPI. The JSON endpoints and the pages answer as the OAuth RFCs say
 * (the endpoints read their own bodies: requests.ts), so their refusals are these, not problem documents.
 */
export const JsonDocument = t.Record(t.String(), t.Unknown());
export const OAuthErrorBody = t.Object(
  { error: t.String(), error_description: t.Optional(t.String()) },
  { description: "An OAuth error (RFC 6749 §5.2, RFC 7591 §3.2.2)" },
);
export const Html = (description: string) => t.String({ description, contentMediaType: "text/html" });
/** An endpoint's form, with an example of it as sent (the form's encoding, which Swagger UI sends as written). */
export const FormBody = (example: string) =>
  t.Any({
    description: "application/x-www-form-urlencoded, as the OAuth RFCs define this endpoint's parameters",
    examples: [example],
  });

export const GrantList = t.Object({
  items: t.Array(
    t.Object({
      id: t.String(),
      client_id: t.String(),
      connector_id: t.Union([t.String(), t.Null()], { description: "The connector whose proxy URL the grant is for" }),
      virtual_server_id: t.Union([t.String(), t.Null()], { description: "Or the virtual server whose MCP URL it is for" }),
      scope: t.Union([t.String(), t.Null()]),
      created_at: t.String({ format: "date-time" }),
      last_used_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
    }),
  ),
});
