import { Elysia, t } from "elysia";
import type { CallbackAnswer, Callback } from "./callback";
import { clientMetadata } from "./client-identity";
import { CALLBACK_PATH, CLIENT_METADATA_PATH } from "./model";
import { confirmationPage, errorPage, successPage } from "./pages";

const Html = (description: string) => t.String({ description, contentMediaType: "text/html" });

/** What the browser gets: the confirmation page, or the outcome (redirect_url when the connect gave one, else a page). */
function answer(result: CallbackAnswer): Response {
  if (result.kind === "confirm") return confirmationPage(result);
  const { outcome } = result;
  if (outcome.redirect_url) {
    const target = new URL(outcome.redirect_url);
    if (!outcome.ok) {
      target.searchParams.set("error", outcome.error);
      target.searchParams.set("error_description", outcome.error_description);
    }
    return new Response(null, { status: 303, headers: { location: target.href, "cache-control": "no-store", "referrer-policy": "no-referrer" } });
  }
  return outcome.ok ? successPage() : errorPage(outcome.error, outcome.error_description);
}

const outcomes = {
  200: Html("HTML page: the connector is connected, or the confirmation asking the person who started the authorization to finish it"),
  303: t.Void({ description: "Redirect to the connect request's redirect_url (with error and error_description on failure)" }),
  400: Html("HTML page naming the error (RFC 6749 §4.1.2.1)"),
  401: Html("The confirmation again: sign in as the user who started the authorization"),
  403: Html("The confirmation again: signed in as another user than the one who started the authorization; nothing was exchanged"),
  429: Html("The confirmation again: too many wrong passwords from this client"),
};

/** The OAuth client's public routes: the authorization callback (and its confirmation) and the Client ID Metadata Document. */
export function oauthRoutes(callback: Callback, publicUrl: () => string) {
  return new Elysia({ detail: { tags: ["OAuth"] } })
    .get(CALLBACK_PATH, async ({ request }) => answer(await callback.land(new URL(request.url).searchParams)), {
      query: t.Object(
        {
          code: t.Optional(t.String()),
          state: t.Optional(t.String()),
          iss: t.Optional(t.String()),
          error: t.Optional(t.String()),
          error_description: t.Optional(t.String()),
          error_uri: t.Optional(t.String()),
        },
        { additionalProperties: true },
      ),
      response: outcomes,
      detail: {
        summary: "OAuth authorization callback",
        description:
          "Where the authorization server sends the user's browser back. An error ends the authorization; a code is exchanged only once the person who " +
          "started the authorization confirms on the page this answers, signed in to the console or by signing in there (POST). The state is single-use and expires after 10 minutes.",
      },
    })
    .post(CALLBACK_PATH, async ({ request, body }) => answer(await callback.confirm(request, body)), {
      body: t.Object(
        {
          callback: t.String({ maxLength: 8192, description: "The callback's query string, as the confirmation page carries it" }),
          username: t.Optional(t.String({ maxLength: 256 })),
          password: t.Optional(t.String({ maxLength: 1024 })),
        },
        { additionalProperties: false },
      ),
      response: outcomes,
      detail: {
        summary: "Finish an OAuth authorization",
        description:
          "The confirmation page's form: exchanges the code when the browser's console session, or the user name and password sent, is the user who started the authorization. " +
          "Another user gets 403 and nothing is exchanged.",
        security: [],
      },
    })
    .get(
      CLIENT_METADATA_PATH,
      () => ({ client_id: `${publicUrl()}${CLIENT_METADATA_PATH}`, ...clientMetadata(`${publicUrl()}${CALLBACK_PATH}`) }),
      {
        response: { 200: t.Record(t.String(), t.Unknown()) },
        detail: {
          summary: "The service's OAuth Client ID Metadata Document",
          description: "Used as client_id with authorization servers that support Client ID Metadata Documents (needs an https SERVER__PUBLIC_URL).",
        },
      },
    );
}
