/**
 * The errors services throw. Each maps to one RFC 9457 problem type; the `problem` plugin
 * writes the body. `detail` is shown to the client, so it never carries a secret.
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

export class ValidationFailed extends AppError {
  readonly status = 422;
  readonly type = "validation-failed";
  readonly title = "The request is not valid";
}

export class UpstreamFailed extends AppError {
  readonly status = 502;
  readonly type = "upstream-failed";
  readonly title = "The upstream server failed";
}

export class UpstreamTimeout extends AppError {
  readonly status = 504;
  readonly type = "upstream-timeout";
  readonly title = "The upstream server did not answer in time";
}

/** A request body over `limit` bytes (the setting that sets the limit named, when there is one). */
export const bodyTooLarge = (limit: number, setting?: string) =>
  new PayloadTooLarge(`The request body is larger than ${limit} bytes${setting ? ` (${setting})` : ""}`);

/** One field's problem as a 422. */
export const invalidField = (field: string, detail: string) =>
  new ValidationFailed(`${field}: ${detail}`, [{ field, detail }]);

/** The upstream MCP server refused the credentials the caller supplied (connect with headers). */
export class UpstreamRejectedCredentials extends AppError {
  readonly status = 422;
  readonly type = "upstream-rejected-credentials";
  readonly title = "The MCP server refused the supplied credentials";
}
