/** MCP server URL rules, shared by connectors and presets (docs/interface.md §4.2). */

export const CONNECTOR_URL_SCHEMES = ["http:", "https:", "mcp+stdio:"] as const;

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export function parseConnectorUrl(raw: string): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "is not an absolute URL" };
  }
  if (!(CONNECTOR_URL_SCHEMES as readonly string[]).includes(url.protocol)) {
    return { ok: false, reason: `has scheme "${url.protocol.slice(0, -1)}"; allowed: http, https, mcp+stdio` };
  }
  if (!url.hostname) return { ok: false, reason: "has no host" };
  if (url.username || url.password) return { ok: false, reason: "must not carry credentials" };
  if (url.hash) return { ok: false, reason: "must not have a fragment" };
  return { ok: true, url };
}

const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443" };

/**
 * The form presets are matched on: scheme and host lower-cased, default port dropped,
 * trailing slash ignored (docs/interface.md §4.2). Query is kept: it can select a different server.
 */
export function normaliseUrl(url: URL): string {
  const scheme = url.protocol.toLowerCase();
  const host = url.hostname.toLowerCase();
  const port = url.port && url.port !== DEFAULT_PORTS[scheme] ? `:${url.port}` : "";
  const path = url.pathname.replace(/\/+$/, "");
  return `${scheme}//${host}${port}${path}${url.search}`;
}
