import { Elysia, t } from "elysia";
import { PROTOCOL_ERRORS } from "../../docs/plugin";
import { FormBody, OAuthErrorBody, OAUTH_PATHS } from "../model";
import { FORM, readForm } from "../requests";
import type { AuthServerEndpointDeps } from "./deps";

/** The revocation endpoint ([RFC 7009 §2](https://www.rfc-editor.org/rfc/rfc7009#section-2)). */
export function revocationRoutes({ server, json }: AuthServerEndpointDeps) {
  const revoke = json(async ({ request }) => {
    await server.revoke(await readForm(request));
    // RFC 7009 §2.2: 200, with no body to read.
    return new Response(null, { status: 200, headers: { "cache-control": "no-store" } });
  });

  return new Elysia({ detail: { tags: ["Authorization server"] } }).post(OAUTH_PATHS.revoke, revoke, {
    parse: FORM,
    body: FormBody("token=the-refresh-token&token_type_hint=refresh_token&client_id=the-registered-client-id"),
    response: {
      200: t.Void({ description: "Revoked (or unknown: not an error)" }),
      400: OAuthErrorBody,
      401: OAuthErrorBody,
    },
    detail: {
      summary: "Revoke a token (RFC 7009)",
      description: "A refresh token ends its whole grant; an unknown token is not an error.",
      ...PROTOCOL_ERRORS,
    },
  });
}
