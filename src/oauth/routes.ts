import { Elysia, t } from "elysia";
import type { Authorization } from "./authorization";
import { clientMetadata } from "./client-identity";
import { CALLBACK_PATH, CLIENT_METADATA_PATH } from "./model";
import { errorPage, successPage } from "./pages";

const html = (body: string, status: number) =>
  new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });

/** The OAuth client's two public routes: the authorization callback and the Client ID Metadata Document. */
export function oauthRoutes(authorization: Authorization, publicUrl: () => string) {
  return new Elysia({ detail: { tags: ["OAuth"] } })
    .get(
      CALLBACK_PATH,
      async ({ request }) => {
        const outcome = await authorization.complete(new URL(request.url).searchParams);
        if (outcome.redirect_url) {
          const target = new URL(outcome.redirect_url);
          if (!outcome.ok) {
            target.searchParams.set("error", outcome.error);
            target.searchParams.set("error_description", outcome.error_description);
          }
          return new Response(null, { status: 303, headers: { location: target.href, "cache-control": "no-store" } });
        }
        return outcome.ok ? html(successPage(), 200) : html(errorPage(outcome.error, outcome.error_description), 400);
      },
      {
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
        response: {
          200: t.String({ description: "HTML page: the connector is connected", contentMediaType: "text/html" }),
          303: t.Void({ description: "Redirect to the connect request's redirect_url (with error and error_description on failure)" }),
          400: t.String({ description: "HTML page naming the error (RFC 6749 §4.1.2.1)", contentMediaType: "text/html" }),
        },
        detail: {
          summary: "OAuth authorization callback",
          description:
            "Where the authorization server sends the user's browser back (no credentials needed; bound to a single-use state that expires after 10 minutes).",
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
          description: "Used as client_id with authorization servers that support Client ID Metadata Documents (needs an https SERVER__PUBLIC_URL).",
        },
      },
    );
}
