import { readResponse, type ApiResponse } from "./api";

export type Send = (request: Request) => Promise<Response>;
type Person = { username: string; password: string };

/**
 * A person's browser at the end of a connector's authorization: it lands on the callback, and on the confirmation
 * page signs in as `person` (the user who started the authorization) and confirms. The answer is the outcome: a page
 * (200, 4xx) or the redirect to redirect_url (303). Without a person, the landing alone.
 */
export async function finishCallback(target: Send | { handle: Send }, callback: string, person?: Person): Promise<ApiResponse> {
  const send = typeof target === "function" ? target : target.handle;
  const landed = await send(new Request(callback, { redirect: "manual" }));
  const page = await readResponse(landed);
  const query = confirmationQuery(page.text);
  if (!person || query === undefined) return page;
  return readResponse(await send(confirmation(callback, query, person)));
}

/** The confirmation form's POST, as the page's form sends it (same origin, form-encoded). */
export function confirmation(
  callback: string,
  query: string,
  person?: Person,
  extraHeaders: Record<string, string> = {},
): Request {
  const url = new URL(callback);
  const fields = new URLSearchParams({
    callback: query,
    ...(person && { username: person.username, password: person.password }),
  });
  return new Request(`${url.origin}${url.pathname}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: url.origin, ...extraHeaders },
    body: fields.toString(),
  });
}

/** The callback query the confirmation page carries, undefined when the page is not a confirmation. */
export function confirmationQuery(html: string): string | undefined {
  const value = /name="callback" value="([^"]*)"/.exec(html)?.[1];
  return value
    ?.replace(/&amp;/g, "&")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");
}
