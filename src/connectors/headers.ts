import { invalidField } from "../http-errors/errors";
import { HOP_BY_HOP_HEADERS } from "../http/hop-by-hop";
import { MAX_HEADERS } from "./model";

/** [RFC 9110 §5.1](https://www.rfc-editor.org/rfc/rfc9110#section-5.1): a field name is a token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * [RFC 9110 §5.5](https://www.rfc-editor.org/rfc/rfc9110#section-5.5): a field value is visible ASCII, obs-text
 * (0x80–0xFF), spaces and tabs — no control character, nothing beyond Latin-1 (an emoji, U+2028), which no HTTP
 * client can send.
 */
const NOT_FIELD_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/u;

/**
 * Headers a connect request may not store (docs/interface.md §4.4). Hop-by-hop headers ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1)),
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
    if (isBlockedHeader(name))
      throw invalidField(field, `header "${name}" is not allowed (hop-by-hop, forwarding, Host, cookie or proxy-owned)`);
    if (seen.has(name.toLowerCase())) throw invalidField(field, `header "${name}" is given twice in different casing`);
    seen.add(name.toLowerCase());
    const bad = NOT_FIELD_VALUE_CHAR.exec(headers[name]!)?.[0];
    if (bad !== undefined) {
      const code = `U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
      throw invalidField(
        field,
        `the value has ${code}, which an HTTP header cannot carry (visible ASCII, Latin-1, spaces and tabs only)`,
      );
    }
  }
}
