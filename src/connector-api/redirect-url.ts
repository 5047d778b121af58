import { invalidField } from "../http-errors/errors";

/**
 * `redirect_url` may only lead to an allowed origin: the service's public URL or one of
 * OAUTH__ALLOWED_REDIRECT_ORIGINS (no open redirect, [RFC 6749 §10.15](https://www.rfc-editor.org/rfc/rfc6749#section-10.15)).
 */
export function assertAllowedRedirect(raw: string, allowedOrigins: readonly string[]): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidField("body.redirect_url", "is not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalidField("body.redirect_url", "must be an http or https URL");
  }
  if (!allowedOrigins.includes(url.origin)) {
    throw invalidField(
      "body.redirect_url",
      `origin ${url.origin} is not allowed; allowed: ${allowedOrigins.join(", ")} (OAUTH__ALLOWED_REDIRECT_ORIGINS)`,
    );
  }
  return url.href;
}
