/**
 * The authorization server's errors: one class per error code of the RFCs it implements, shaped as the MCP SDK shapes
 * its own (server/auth/errors.ts: an OAuthError subclass per code, rendered by `toResponseObject`). Services throw
 * them; the JSON endpoints render them in one place (responses.ts), and the authorization endpoint sends the two
 * that follow a person's answer back to the client (authorization.ts). The description is shown to the client, so it
 * never carries a secret.
 *
 * Codes the RFCs define that this server never produces, so have no class: `unauthorized_client` (every client may
 * use both grants), `invalid_scope` (unknown scopes are dropped, scope.ts), `server_error` (a failure is a logged
 * problem document, http-errors/), `invalid_software_statement` and `unapproved_software_statement` (software
 * statements are ignored, [RFC 7591 §2.3](https://www.rfc-editor.org/rfc/rfc7591#section-2.3)), `unsupported_token_type`
 * (both token types can be revoked).
 */
export abstract class OAuthError extends Error {
  /** The `error` code, as the RFC spells it. */
  abstract readonly code: string;
  readonly status: number = 400;
  readonly headers: Record<string, string> = {};
  constructor(readonly description: string) {
    super(description);
    this.name = new.target.name;
  }

  /** The error as the OAuth RFCs write it: [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2), [§4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1), [RFC 7591 §3.2.2](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.2). */
  toResponseObject(): { error: string; error_description: string } {
    return { error: this.code, error_description: this.description };
  }
}

/** [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2): a parameter missing, repeated or malformed. */
export class InvalidRequest extends OAuthError {
  readonly code = "invalid_request";
}

/**
 * [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2): an unknown client. 401, which §5.2 allows; no
 * WWW-Authenticate, as clients here are public and authenticate with no scheme.
 */
export class InvalidClient extends OAuthError {
  readonly code = "invalid_client";
  override readonly status = 401;
}

/** [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2): a code or refresh token that is unknown, expired, used, another client's, or whose PKCE proof fails. */
export class InvalidGrant extends OAuthError {
  readonly code = "invalid_grant";
}

/** [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2): a grant type other than the code and refresh token grants. */
export class UnsupportedGrantType extends OAuthError {
  readonly code = "unsupported_grant_type";
}

/** [RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1): a response type other than `code`. */
export class UnsupportedResponseType extends OAuthError {
  readonly code = "unsupported_response_type";
}

/** [RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1): the person declined. */
export class AccessDenied extends OAuthError {
  readonly code = "access_denied";
}

/**
 * [RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1): the server cannot take the request now.
 * Registration beyond a bound answers it with 429 and Retry-After ([RFC 6585 §4](https://www.rfc-editor.org/rfc/rfc6585#section-4)):
 * the bound is the client's address's or the service's, and room comes back at a known time.
 */
export class TemporarilyUnavailable extends OAuthError {
  readonly code = "temporarily_unavailable";
  override readonly status = 429;
  override readonly headers: Record<string, string>;
  constructor(
    description: string,
    readonly retryAfterSeconds: number,
  ) {
    super(description);
    this.headers = { "retry-after": String(retryAfterSeconds) };
  }
}

/** [RFC 8707 §2](https://www.rfc-editor.org/rfc/rfc8707#section-2): the resource is missing, not a proxy URL of this service, or not the one granted. */
export class InvalidTarget extends OAuthError {
  readonly code = "invalid_target";
}

/** [RFC 7591 §3.2.2](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.2): a redirect URI this server does not accept. */
export class InvalidRedirectUri extends OAuthError {
  readonly code = "invalid_redirect_uri";
}

/** [RFC 7591 §3.2.2](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.2): client metadata that is not JSON, or not valid. */
export class InvalidClientMetadata extends OAuthError {
  readonly code = "invalid_client_metadata";
}

/**
 * An authorization request answered with a page for the person, never a redirect: before the person has signed in
 * and answered the consent page, nothing may send the browser to a client's redirect URI. An unknown client or a
 * redirect URI it did not register is never redirected to ([RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1)); nor is a registered one, since anyone
 * can register one of their own: the server would be an open redirector ([RFC 9700 §4.11.2](https://www.rfc-editor.org/rfc/rfc9700#section-4.11.2): authenticate the
 * user first, redirect only to a URI it trusts). Rendered in one place: `errorPage` (pages.ts).
 */
export class NoRedirect extends Error {
  constructor(
    message: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  /** An OAuth error in the request itself: named for the person, not sent to the client. */
  static of(error: OAuthError): NoRedirect {
    return new NoRedirect(`The application's request cannot be answered (${error.code}): ${error.description}.`);
  }
}
