/**
 * Hop-by-hop header fields ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1), with the legacy Keep-Alive and Proxy-Connection): they describe
 * one connection and never cross a proxy. The one list for both what connect refuses to store and what the
 * MCP proxy drops from responses.
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
