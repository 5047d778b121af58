/**
 * Swagger UI's page at /docs, written here rather than by @elysiajs/openapi (whose page starts Swagger UI from an
 * inline script): every script and style is a file of this origin, so the page's policy can refuse anything inline.
 */
const ASSETS = "/docs/assets";

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>connector-service API</title>
<link rel="stylesheet" href="${ASSETS}/swagger-ui.css">
<link rel="stylesheet" href="${ASSETS}/docs.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${ASSETS}/swagger-ui-bundle.js"></script>
<script src="${ASSETS}/docs.js"></script>
</body>
</html>
`;

/** Starts Swagger UI on the service's own document. The validator badge would load an image from an outside host. */
export const DOCS_JS = `window.ui = SwaggerUIBundle({ dom_id: "#swagger-ui", url: "openapi.json", validatorUrl: "none", persistAuthorization: false });
`;

/** Follows the system's dark mode, as the plugin's page did. */
export const DOCS_CSS = `@media (prefers-color-scheme: dark) {
  body { background-color: #222; }
  .swagger-ui { filter: invert(92%) hue-rotate(180deg); }
  .swagger-ui .microlight { filter: invert(100%) hue-rotate(180deg); }
}
`;

/**
 * This origin's files only; `data:` images are Swagger UI's icons; "Try it out" calls this origin. Never framed: a
 * framed page could be clicked through (its Authorize and Execute buttons act with the person's credentials).
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
