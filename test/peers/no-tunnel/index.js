// mcp-proxy imports pipenet for --tunnel (a public URL through a relay host); the tests never tunnel (NOTES: never
// pass --tunnel), so this stand-in refuses instead of installing pipenet, which requires Node >= 22.
export function pipenet() {
  throw new Error("mcp-proxy --tunnel is not available: pipenet is replaced by a stand-in (package.json overrides)");
}
