/** The pages a browser sees at the end of an authorization when no redirect_url was given (spec part 7). */
const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px}</style></head>
<body>${body}</body></html>`;
}

export function successPage(): string {
  return page("Connected", `<h1>Connected</h1><p>The connector is authorized and ready. You can close this window.</p>`);
}

/** [RFC 6749 §4.1.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1): the error code and its description, shown to the user. */
export function errorPage(error: string, description: string): string {
  return page(
    "Authorization failed",
    `<h1>Authorization failed</h1><p><code>${escape(error)}</code></p><p>${escape(description)}</p>` +
      `<p>Connect the connector again to start a new authorization.</p>`,
  );
}
