import { Elysia, t } from "elysia";
import { PROTOCOL_ERRORS } from "../docs/plugin";
import { readCapped } from "../http/read-capped";
import type { CallbackAnswer, Callback, CallbackForm } from "./callback";
import { clientMetadata } from "./client-identity";
import { CALLBACK_PATH, CLIENT_METADATA_PATH } from "./model";
import { confirmationPage, errorPage, successPage } from "./pages";

const FORM_TYPE = "application/x-www-form-urlencoded";
/** The confirmation form is small: its callback query, a user name and a password. */
const MAX_FORM_BYTES = 16 * 1024;

/** The confirmation page's form, or undefined when the body is not one (another type, over the cap, no callback). */
async function readConfirmation(request: Request): Promise<CallbackForm | undefined> {
  if (!(request.headers.get("content-type") ?? "").toLowerCase().startsWith(FORM_TYPE)) return undefined;
  if (Number(request.headers.get("content-length") ?? "0") > MAX_FORM_BYTES) return undefined;
  const bytes = await readCapped(request.body, MAX_FORM_BYTES);
  if (!bytes) return undefined;
  const fields = new URLSearchParams(bytes.toString("utf8"));
  const callback = fields.get("callback");
  if (callback === null) return undefined;
  return {
    callback,
    ...(fields.get("username") && { username: fields.get("username")!, password: fields.get("password") ?? "" }),
  };
}

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
    return new Response(null, {
      status: 303,
      headers: { location: target.href, "cache-control": "no-store", "referrer-policy": "no-referrer" },
    });
  }
  return outcome.ok ? successPage() : errorPage(outcome.error, outcome.error_description);
}

const outcomes = {
  200: Html(
    "HTML page: the connector is connected, or the confirmation asking the person who started the authorization to finish it",
  ),
  303: t.Void({ description: "Redirect to the connect request's redirect_url (with error and error_description on failure)" }),
  400: Html("HTML page naming the error (RFC 6749 §4.1.2.1)"),
  401: Html("The confirmation again: sign in as the user who started the authorization"),
  403: Html(
    "The confirmation again: signed in as another user than the one who started the authorization; nothing was exchanged",
  ),
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
    .post(
      CALLBACK_PATH,
      async ({ request }) => {
        const form = await readConfirmation(request);
        return form
          ? answer(await callback.confirm(request, form))
          : errorPage(
              "invalid_request",
              `The form must be ${FORM_TYPE} of at most ${MAX_FORM_BYTES} bytes with a callback field`,
            );
      },
      {
        // The page's form, read here under its own cap: a person gets HTML pages, never the API's problem documents.
        parse: [() => null, FORM_TYPE] as [() => null, typeof FORM_TYPE],
        body: t.Any({
          description: `${FORM_TYPE}: callback (the callback's query string, as the confirmation page carries it), and username and password when signing in on the page`,
          examples: ["callback=code%3Dthe-code%26state%3Dthe-state&username=alice&password=correct+horse+battery"],
        }),
        response: outcomes,
        detail: {
          summary: "Finish an OAuth authorization",
          description:
            "The confirmation page's form: exchanges the code when the browser's console session, or the user name and password sent, is the user who started the authorization. " +
            "Another user gets 403 and nothing is exchanged.",
          security: [],
          ...PROTOCOL_ERRORS,
        },
      },
    )
    .get(
      CLIENT_METADATA_PATH,
      () => ({ client_id: `${publicUrl()}${CLIENT_METADATA_PATH}`, ...clientMetadata(`${publicUrl()}${CALLBACK_PATH}`) }),
      {
        response: { 200: t.Record(t.String(), t.Unknown()) },
        detail: {
          summary: "The service's OAuth Client ID Metadata Document",
          description:
            "Used as client_id with authorization servers that support Client ID Metadata Documents (needs an https SERVER__PUBLIC_URL).",
        },
      },
    );
}
