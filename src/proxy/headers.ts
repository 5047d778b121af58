/**
 * The client's request headers the MCP proxy forwards (docs/interface.md §6): the MCP transport's own; then
 * the connector's stored credentials are added (forward/headers.ts).
 */
export const MCP_REQUEST_HEADERS = [
  "accept",
  "content-type",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  // MCP 2026-07-28 routing headers.
  "mcp-method",
  "mcp-name",
  // Passed so the upstream's compression reaches the client untouched (fetch runs with decompress: false).
  "accept-encoding",
] as const;
