import { Elysia } from "elysia";
import { PROTOCOL_ERRORS } from "../../docs/plugin";
import { FormBody, JsonDocument, OAuthErrorBody, OAUTH_PATHS } from "../model";
import { FORM, readForm } from "../requests";
import { oauthJson } from "../responses";
import type { AuthServerEndpointDeps } from "./deps";

/** The token endpoint ([RFC 6749 §3.2](https://www.rfc-editor.org/rfc/rfc6749#section-3.2)): each grant type has its rules (token.ts). */
export function tokenRoutes({ server, json }: AuthServerEndpointDeps) {
  const token = json(async ({ request }) => oauthJson(await server.token(await readForm(request))));

  return new Elysia({ detail: { tags: ["Authorization server"] } }).post(OAUTH_PATHS.token, token, {
    parse: FORM,
    body: FormBody(
      "grant_type=authorization_code&code=the-code-from-the-redirect&redirect_uri=http%3A%2F%2F127.0.0.1%3A33418%2Fcallback&client_id=the-registered-client-id&code_verifier=the-pkce-code-verifier",
    ),
    response: { 200: JsonDocument, 400: OAuthErrorBody, 401: OAuthErrorBody },
    detail: {
      summary: "Token endpoint: code and refresh token grants (RFC 6749 §4.1.3, §6)",
      description: "Public clients: client_id and the PKCE code_verifier; refresh tokens rotate.",
      ...PROTOCOL_ERRORS,
    },
  });
}
