import { createHash } from "node:crypto";
import { Elysia } from "elysia";
// Embedded in the binary as text (no build step, no outside URL): the console works offline (docs/interface.md §2).
import indexHtml from "./assets/index.html" with { type: "text" };
import appCss from "./assets/app.css" with { type: "text" };
import icon from "./assets/icon.svg" with { type: "text" };
import accountJs from "./assets/account.js" with { type: "text" };
import agentsJs from "./assets/agents.js" with { type: "text" };
import auditJs from "./assets/audit.js" with { type: "text" };
import apiJs from "./assets/api.js" with { type: "text" };
import appJs from "./assets/app.js" with { type: "text" };
import clientsJs from "./assets/clients.js" with { type: "text" };
import connectorsJs from "./assets/connectors.js" with { type: "text" };
import domJs from "./assets/dom.js" with { type: "text" };
import mcpJs from "./assets/mcp.js" with { type: "text" };
import tokensJs from "./assets/tokens.js" with { type: "text" };
import toolDiffJs from "./assets/tool-diff.js" with { type: "text" };
import toolsJs from "./assets/tools.js" with { type: "text" };
import tryitJs from "./assets/tryit.js" with { type: "text" };
import usersJs from "./assets/users.js" with { type: "text" };
import virtualServersJs from "./assets/virtual-servers.js" with { type: "text" };

/** Where the console's files are served from; the page itself is at `/`. */
export const CONSOLE_ASSETS = "/console";

const JS = "text/javascript; charset=utf-8";
/** Every file of the console: its path and what it is. */
const FILES: [path: string, body: string, type: string][] = [
  ["/", indexHtml, "text/html; charset=utf-8"],
  [`${CONSOLE_ASSETS}/app.css`, appCss, "text/css; charset=utf-8"],
  [`${CONSOLE_ASSETS}/icon.svg`, icon, "image/svg+xml"],
  [`${CONSOLE_ASSETS}/app.js`, appJs, JS],
  [`${CONSOLE_ASSETS}/api.js`, apiJs, JS],
  [`${CONSOLE_ASSETS}/dom.js`, domJs, JS],
  [`${CONSOLE_ASSETS}/connectors.js`, connectorsJs, JS],
  [`${CONSOLE_ASSETS}/mcp.js`, mcpJs, JS],
  [`${CONSOLE_ASSETS}/tryit.js`, tryitJs, JS],
  [`${CONSOLE_ASSETS}/tools.js`, toolsJs, JS],
  [`${CONSOLE_ASSETS}/tool-diff.js`, toolDiffJs, JS],
  [`${CONSOLE_ASSETS}/clients.js`, clientsJs, JS],
  [`${CONSOLE_ASSETS}/virtual-servers.js`, virtualServersJs, JS],
  [`${CONSOLE_ASSETS}/audit.js`, auditJs, JS],
  [`${CONSOLE_ASSETS}/tokens.js`, tokensJs, JS],
  [`${CONSOLE_ASSETS}/agents.js`, agentsJs, JS],
  [`${CONSOLE_ASSETS}/users.js`, usersJs, JS],
  [`${CONSOLE_ASSETS}/account.js`, accountJs, JS],
];

/**
 * Nothing but this origin's own files: no inline script or style, no outside host, no framing, no form posted
 * elsewhere. `connect-src 'self'` covers the API, its event stream and the proxy URLs "Try it" speaks MCP to.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  // Another page that opens the console gets no handle on it; the OAuth windows the console opens keep theirs (it closes them).
  "cross-origin-opener-policy": "same-origin-allow-popups",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
};

/** [RFC 9110 §13.1.2](https://www.rfc-editor.org/rfc/rfc9110#section-13.1.2): If-None-Match matches when any listed entity tag (weak or not) is the current one. */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === "*") return true;
  return ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

/**
 * The web console: one page at `/` and its scripts and styles under /console/, embedded in the binary. Files are
 * not versioned by name, so each answer is revalidated (`no-cache`) against its ETag: a 304 costs a round trip, and
 * a new binary's console is never mixed with an old one's cached script.
 */
export function consoleRoutes() {
  const app = new Elysia({ name: "console" });
  for (const [path, body, type] of FILES) {
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    const headers = { ...SECURITY_HEADERS, etag, "cache-control": "no-cache" };
    app.get(
      path,
      ({ request }) =>
        matches(request.headers.get("if-none-match"), etag)
          ? new Response(null, { status: 304, headers })
          : new Response(body, { headers: { ...headers, "content-type": type } }),
      { detail: { hide: true } },
    );
  }
  return app;
}
