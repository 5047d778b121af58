import { createHash } from "node:crypto";
import type { ConsentTarget } from "./authorization";
import type { NoRedirect } from "./errors";
import type { ClientRow } from "./repository";

/**
 * The person's pages of the authorization flow: sign-in, consent, and errors. Plain HTML forms — no script, no
 * outside URL, not framable — so they work in any browser an MCP client opens.
 */

const escape = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
main{max-width:28rem;margin:10vh auto;background:#fff;padding:2rem;border-radius:.5rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem}input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
button{font:inherit;padding:.5rem 1rem;margin:1rem .5rem 0 0;cursor:pointer}.note{color:#5b606b;font-size:.9rem}.warn{color:#8a4b00}.error{color:#a40e26}
dl{margin:1rem 0}dt{font-weight:600}dd{margin:0 0 .6rem 0;word-break:break-all}`;

/** The page's one style element, allowed by its digest ([CSP3 §2.3.1](https://www.w3.org/TR/CSP3/#grammardef-hash-source)): nothing else inline runs or applies. */
const STYLE_SOURCE = `'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`;

/**
 * Nothing but the page's own style; never in a frame (a framed Allow button could be clicked for the person); forms
 * post only to `formAction` (CSP3 form-action also governs where the answer to a form may redirect).
 */
function pageHeaders(formAction: string, extra: Record<string, string>) {
  return {
    ...extra,
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": `default-src 'none'; style-src ${STYLE_SOURCE}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    "referrer-policy": "no-referrer",
  };
}

const page = (title: string, body: string, formAction: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escape(title)} · connector-service</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`,
    {
      status,
      headers: pageHeaders(formAction, headers),
    },
  );

/**
 * Where the consent form's answer may go: this page, and the redirect URI's origin (or a native app's scheme, RFC
 * 8252 §7.1). A host a CSP source cannot name (an IPv6 literal, or characters CSP gives meaning to) falls back to
 * the URI's scheme.
 */
function consentFormAction(redirectUri: string): string {
  const url = new URL(redirectUri);
  const origin = `${url.protocol}//${url.host}`;
  return `'self' ${url.host && /^[a-z][a-z0-9+.-]*:\/\/[a-z0-9.-]+(:\d+)?$/.test(origin) ? origin : url.protocol}`;
}

/** Who is asking, as the client says and as far as the service can tell. */
function clientFacts(client: ClientRow, redirectUri: string): string {
  const name = client.metadata.client_name?.trim() || "An application without a name";
  const verified =
    client.kind === "metadata-document"
      ? `<dd class="note">Known by its metadata document at ${escape(new URL(client.client_id).host)}</dd>`
      : `<dd class="warn">Unverified: it registered itself and named itself</dd>`;
  return `<dt>Application</dt><dd>${escape(name)}</dd>${verified}<dt>It will receive the answer at</dt><dd>${escape(new URL(redirectUri).host || redirectUri)}</dd>`;
}

/** The sign-in form posts back to the authorization request's own URL (`action=""`), which carries the request. */
export function signInPage(client: ClientRow, redirectUri: string, error?: string): Response {
  return page(
    "Sign in",
    `<h1>Sign in to connector-service</h1>
<p>An application asks to use one of your MCP connectors or virtual servers.</p>
<dl>${clientFacts(client, redirectUri)}</dl>
${error ? `<p class="error">${escape(error)}</p>` : ""}
<form method="post" action="">
<input type="hidden" name="step" value="sign-in">
<label for="username">User name</label><input id="username" name="username" type="text" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
    "'self'",
    error ? 401 : 200,
  );
}

export function consentPage(
  handle: string,
  client: ClientRow,
  redirectUri: string,
  target: ConsentTarget,
  username: string,
): Response {
  // What is not the person's to give is not named (the request is refused when allowed: authorization.ts).
  const reach = !target
    ? "a connector or virtual server that is not yours (the request will be refused)"
    : target.kind === "connector"
      ? `${escape(target.name)} (${escape(target.url)}), through this service, with the credentials the connector holds`
      : `the virtual server ${escape(target.name)} (${escape(target.url)}): each of its member connectors, through this service, with the credentials they hold`;
  return page(
    "Allow access",
    `<h1>Allow access to ${target?.kind === "virtual server" ? "an MCP virtual server" : "an MCP connector"}?</h1>
<p>Signed in as <strong>${escape(username)}</strong>.</p>
<dl>${clientFacts(client, redirectUri)}
<dt>It will reach</dt><dd>${reach}</dd></dl>
<p class="note">You can revoke this at any time (GET and DELETE /api/v1/grants).</p>
<form method="post" action="">
<input type="hidden" name="handle" value="${escape(handle)}"><input type="hidden" name="step" value="consent">
<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button>
</form>`,
    consentFormAction(redirectUri),
  );
}

/** The one rendering of the authorization endpoint's errors: a page for the person, never a redirect (errors.ts: NoRedirect). */
export function errorPage(error: NoRedirect): Response {
  return page(
    "Cannot continue",
    `<h1>This request cannot continue</h1><p class="error">${escape(error.message)}</p>`,
    "'none'",
    error.status,
    error.headers,
  );
}

/** The answer to the consent form: back to the client's redirect URI ([RFC 6749 §4.1.2](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2)), with 303 so the browser GETs it. */
export const seeOther = (location: string) =>
  new Response(null, { status: 303, headers: { location, "cache-control": "no-store", "x-content-type-options": "nosniff" } });
