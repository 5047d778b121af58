import { invalidField } from "../http-errors/errors";
import { HOP_BY_HOP_HEADERS } from "../http/hop-by-hop";
import { MAX_HEADERS } from "./model";

/** [RFC 9110 §5.1](https://www.rfc-editor.org/rfc/rfc9110#section-5.1): a field name is a token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** [RFC 9110 §5.5](https://www.rfc-editor.org/rfc/rfc9110#section-5.5): CR, LF and NUL are never allowed in a field value. */
const FORBIDDEN_VALUE_CHARS = /[\r\n\0]/;

/**
 * Headers a connect request may not store (spec part 5). Hop-by-hop headers ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1)),
 * forwarding headers (RFC 7239, X-Forwarded-*, Via), Host and cookies; plus the framing and MCP
 * transport headers the proxy owns, since a stored copy would corrupt every request.
 */
const BLOCKED = new Set([
  ...HOP_BY_HOP_HEADERS,
  "forwarded",
  "via",
  "host",
  "cookie",
  "set-cookie",
  "content-length",
  "mcp-session-id",
  "mcp-protocol-version",
]);

export function isBlockedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return BLOCKED.has(lower) || lower.startsWith("x-forwarded-");
}

/** Throws a 422 naming the first header that cannot be stored. */
export function assertStorableHeaders(headers: Record<string, string>): void {
  const names = Object.keys(headers);
  if (names.length > MAX_HEADERS) throw invalidField("body.headers", `at most ${MAX_HEADERS} headers`);
  const seen = new Set<string>();
  for (const name of names) {
    const field = `body.headers.${name}`;
    if (!TOKEN.test(name)) throw invalidField(field, `"${name}" is not a valid header name`);
    if (isBlockedHeader(name)) throw invalidField(field, `header "${name}" is not allowed (hop-by-hop, forwarding, Host, cookie or proxy-owned)`);
    if (seen.has(name.toLowerCase())) throw invalidField(field, `header "${name}" is given twice in different casing`);
    seen.add(name.toLowerCase());
    if (FORBIDDEN_VALUE_CHARS.test(headers[name]!)) throw invalidField(field, "the value must not contain CR, LF or NUL");
  }
}
