/**
 * The errors services throw. Each maps to one RFC 9457 problem type (its `type` slug is part of the API: clients
 * may switch on it); problem.ts writes the body. `detail` is shown to the client, so it never carries a secret.
 */
export type FieldError = { field: string; detail: string };

export abstract class AppError extends Error {
  abstract readonly status: number;
  abstract readonly type: string;
  abstract readonly title: string;
  readonly headers: Record<string, string> = {};
  constructor(
    readonly detail: string,
    readonly errors?: FieldError[],
  ) {
    super(detail);
  }
}

export class BadRequest extends AppError {
  readonly status = 400;
  readonly type = "bad-request";
  readonly title = "Bad request";
}

export class Unauthorized extends AppError {
  readonly status = 401;
  readonly type = "unauthorized";
  readonly title = "Authentication required";
  override readonly headers = { "www-authenticate": 'Basic realm="connector-service", charset="UTF-8"' };
}

/** [RFC 6750 §3.1](https://www.rfc-editor.org/rfc/rfc6750#section-3.1) invalid_token: a bearer token that is not good here. */
export class InvalidToken extends AppError {
  readonly status = 401;
  readonly type = "invalid-token";
  readonly title = "The access token is not valid here";
  override readonly headers = { "www-authenticate": 'Bearer error="invalid_token"' };
}

export class Forbidden extends AppError {
  readonly status = 403;
  readonly type = "forbidden";
  readonly title = "Not allowed";
}

export class NotFound extends AppError {
  readonly status = 404;
  readonly type = "not-found";
  readonly title = "Not found";
}

export class Conflict extends AppError {
  readonly status = 409;
  readonly type = "conflict";
  readonly title = "Conflict with the current state";
}

export class PayloadTooLarge extends AppError {
  readonly status = 413;
  readonly type = "payload-too-large";
  readonly title = "Request body too large";
}

export class TooManyRequests extends AppError {
  readonly status = 429;
  readonly type: string = "too-many-requests";
  readonly title: string = "Too many requests";
  override readonly headers: Record<string, string>;
  constructor(detail: string, retryAfterSeconds: number) {
    super(detail);
    this.headers = { "retry-after": String(retryAfterSeconds) };
  }
}

/**
 * A rate limit's bucket is empty (docs/behaviour.md "Rate limits"): a type of its own, so a client can tell "slow down,
 * then retry" from the caps on open streams and held bytes (`too-many-requests`). RFC 6585 §4, RFC 9110 §10.2.3.
 */
export class RateLimited extends TooManyRequests {
  override readonly type = "rate-limited";
  override readonly title = "Rate limit reached";
}

export class UnsupportedMediaType extends AppError {
  readonly status = 415;
  readonly type = "unsupported-media-type";
  readonly title = "The request body's media type is not accepted here";
}

export class ValidationFailed extends AppError {
  readonly status = 422;
  readonly type = "validation-failed";
  readonly title = "The request is not valid";
}

export class Internal extends AppError {
  readonly status = 500;
  readonly type = "internal";
  readonly title = "Internal error";
  constructor() {
    super("The service failed to handle the request; the log has the details under this request id");
  }
}

export class ServiceUnavailable extends AppError {
  readonly status = 503;
  readonly type = "not-ready";
  readonly title = "Not ready";
}

/** The store refused (disk full, I/O error, busy): nothing was written; worth retrying later. */
export class StorageUnavailable extends AppError {
  readonly status = 503;
  readonly type = "storage-unavailable";
  readonly title = "The service cannot use its database now";
  override readonly headers = { "retry-after": "30" };
}

export class UpstreamFailed extends AppError {
  readonly status = 502;
  readonly type = "upstream-failed";
  readonly title = "The upstream server failed";
}

/**
 * An upstream's answer a relay does not pass on (forward/forward.ts): a redirect, or a body of a type a browser could
 * render on the service's origin. A client's error (4xx) keeps its status, so a client still learns "unknown session"
 * (404) or "no stream here" (405); anything else is a 502.
 */
export class UpstreamAnswerRefused extends AppError {
  readonly type = "upstream-answer-refused";
  readonly title = "The upstream's answer is not relayed";
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(detail);
  }
}

export class UpstreamTimeout extends AppError {
  readonly status = 504;
  readonly type = "upstream-timeout";
  readonly title = "The upstream server did not answer in time";
}

/** A request body over `limit` bytes; the setting that sets the limit is named. */
export const bodyTooLarge = (limit: number, setting: string) =>
  new PayloadTooLarge(`The request body is larger than ${limit} bytes (${setting})`);

/** Fields' problems as one 422, its detail naming each. */
export const invalidFields = (errors: FieldError[]) =>
  new ValidationFailed(
    errors.map((e) => `${e.field}: ${e.detail}`).join("; ") || "The request does not match the schema",
    errors,
  );

/** One field's problem as a 422. */
export const invalidField = (field: string, detail: string) => invalidFields([{ field, detail }]);

/** The upstream MCP server refused the credentials the caller supplied (connect with headers). */
export class UpstreamRejectedCredentials extends AppError {
  readonly status = 422;
  readonly type = "upstream-rejected-credentials";
  readonly title = "The MCP server refused the supplied credentials";
}

/*
 * Why an OAuth authorization could not start at connect (MCP authorization, the client side). Each has its own
 * type so a client can tell "give me a client_id" from "the server's metadata is broken" from "try again later".
 */

/** No client identity: no client_id given, no Client ID Metadata Document support, no Dynamic Client Registration. */
export class OAuthClientRequired extends AppError {
  readonly status = 422;
  readonly type = "oauth-client-required";
  readonly title = "The authorization server needs a client_id for this connector";
}

/** The server's RFC 9728 / RFC 8414 metadata is missing, unsafe, or lacks what MCP requires (PKCE S256). */
export class OAuthDiscoveryFailed extends AppError {
  readonly status = 502;
  readonly type = "oauth-discovery-failed";
  readonly title = "The MCP server's authorization metadata cannot be used";
}

/** The authorization server did not answer, or not in time. Worth retrying. */
export class OAuthServerUnreachable extends AppError {
  readonly status = 502;
  readonly type = "oauth-server-unreachable";
  readonly title = "The authorization server could not be reached";
}

/** The authorization server answered with an OAuth error (e.g. it refused the client registration). */
export class OAuthRequestRejected extends AppError {
  readonly status = 502;
  readonly type = "oauth-request-rejected";
  readonly title = "The authorization server refused the request";
}

/*
 * Why the proxy cannot relay for a connector whose server's authorization changed. Each leaves the connector in a
 * state that says what to do (auth_required: open auth_request.authorization_url; disconnected: connect again).
 */

/** The server answered 403 insufficient_scope: a new authorization asks for the wider scope (connector auth_required). */
export class OAuthScopeRequired extends AppError {
  readonly status = 403;
  readonly type = "oauth-scope-required";
  readonly title = "The MCP server needs a scope the connector was not granted";
}

/** An open server started answering 401: the OAuth flow began (connector auth_required). */
export class OAuthAuthorizationRequired extends AppError {
  readonly status = 409;
  readonly type = "oauth-authorization-required";
  readonly title = "The MCP server now requires authorization";
}

/** The server refuses the stored credentials (and a refresh did not help): the connector is disconnected. */
export class UpstreamCredentialsRevoked extends AppError {
  readonly status = 502;
  readonly type = "upstream-credentials-revoked";
  readonly title = "The MCP server no longer accepts the connector's credentials";
}
