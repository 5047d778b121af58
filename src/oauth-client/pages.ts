import type { Confirmation } from "./callback";
import { CALLBACK_PATH } from "./model";

/**
 * The pages a browser sees at the end of a connector's authorization: the confirmation (callback.ts), and success or
 * the error when no redirect_url was given. Plain HTML forms: no script, nothing from elsewhere, not framable, not
 * cached, and no Referer (the confirmation carries the code).
 */
const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "referrer-policy": "no-referrer",
};

function page(title: string, body: string, status: number): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px}.note{color:#5b606b}.error{color:#a40e26}
label{display:block;margin:.8rem 0 .2rem}input[type=text],input[type=password]{width:100%;max-width:22rem;box-sizing:border-box;padding:.5rem;font:inherit}
button{font:inherit;padding:.5rem 1rem;margin:1rem 0;cursor:pointer}hr{border:0;border-top:1px solid #ddd;margin:1.5rem 0}</style></head>
<body>${body}</body></html>`;
  return new Response(html, { status, headers: HEADERS });
}

export function successPage(): Response {
  return page("Connected", `<h1>Connected</h1><p>The connector is authorized and ready. You can close this window.</p>`, 200);
}

/** [RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1): the error code and its description, shown to the user. */
export function errorPage(error: string, description: string, status = 400): Response {
  return page(
    "Authorization failed",
    `<h1>Authorization failed</h1><p><code>${escape(error)}</code></p><p>${escape(description)}</p>` +
      `<p>Connect the connector again to start a new authorization.</p>`,
    status,
  );
}

/** "Connect *name* for *user*?": with the console session (one button), or by signing in on the page. */
export function confirmationPage(c: Confirmation): Response {
  const hidden = `<input type="hidden" name="callback" value="${escape(c.query)}">`;
  return page(
    "Finish connecting",
    `<h1>Connect ${escape(c.connector.name)} for ${escape(c.startedBy)}?</h1>
<p>You approved access at the authorization server. Finishing gives the connector <strong>${escape(c.connector.name)}</strong>
(<code>${escape(c.connector.url)}</code>) of <strong>${escape(c.startedBy)}</strong> the account you approved with:
agents using that connector will act as you there. Finish only if you started this connection yourself.</p>
${c.notice ? `<p class="error">${escape(c.notice)}</p>` : ""}
<form method="post" action="${CALLBACK_PATH}">${hidden}
<button type="submit">Connect (signed in to the console as ${escape(c.startedBy)})</button>
</form>
<hr>
<form method="post" action="${CALLBACK_PATH}">${hidden}
<p class="note">Not signed in to the console in this browser? Sign in as ${escape(c.startedBy)}:</p>
<label for="username">User name</label><input id="username" name="username" type="text" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in and connect</button>
</form>`,
    c.status,
  );
}
