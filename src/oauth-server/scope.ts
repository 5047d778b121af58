/**
 * The scopes this server knows. An access token is good at one connector's MCP proxy URL (the RFC 8707 resource the
 * person consented to) and nowhere else; `mcp` names that use. There is no ID token here, so no OpenID scope
 * (`openid`, `profile`, `email`) is known, and no `offline_access`: every grant has a refresh token anyway (MCP
 * SEP-2207 lets clients ask for it only when it is listed).
 */
export const SCOPES_SUPPORTED = ["mcp"] as const;
/** What a client that names no known scope gets ([RFC 6749 §3.3](https://www.rfc-editor.org/rfc/rfc6749#section-3.3): a pre-defined default). */
export const DEFAULT_SCOPE = "mcp";

/**
 * The scope granted for a requested one ([RFC 6749 §3.3](https://www.rfc-editor.org/rfc/rfc6749#section-3.3): the server may ignore what it does not know, and then
 * says what it granted): the known scopes asked for, else the default. Unknown ones are dropped rather than refused
 * with invalid_scope, so that clients that ask for OpenID scopes out of habit still work, told the truth.
 */
export function grantedScope(requested: string | null): string {
  const known = new Set(
    (requested ?? "")
      .split(" ")
      .filter((s): s is (typeof SCOPES_SUPPORTED)[number] => (SCOPES_SUPPORTED as readonly string[]).includes(s)),
  );
  return known.size ? [...known].join(" ") : DEFAULT_SCOPE;
}
