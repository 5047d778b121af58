/**
 * Hop-by-hop header fields ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1), with the legacy Keep-Alive and Proxy-Connection): they describe
 * one connection and never cross a proxy, so connect refuses to store them (connectors/headers.ts). Responses need no
 * such list: the relays pass back only the protocols' own headers (forward/headers.ts).
 */
export const HOP_BY_HOP_HEADERS: readonly string[] = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authenticate",
  "proxy-authorization",
];
