import { Elysia, t } from "elysia";
import { PROTOCOL_ERRORS } from "../../docs/plugin";
import { TooManyRequests, Unauthorized } from "../../http-errors/errors";
import type { Principal } from "../../users/model";
import { NoRedirect } from "../errors";
import { FormBody, Html, OAUTH_PATHS } from "../model";
import { consentPage, errorPage, seeOther, signInPage } from "../pages";
import { FORM, readPageForm } from "../requests";
import type { AuthServerEndpointDeps } from "./deps";

const pageResponses = {
  200: Html("HTML page: sign-in, consent"),
  303: t.Void({
    description:
      "Back to the client's redirect URI, with code or error, state and iss: only once the person signed in and answered",
  }),
  400: Html("HTML page naming the error: a request is never redirected before the person answered (RFC 9700 §4.11.2)"),
};

/** A handler of the person's pages: what it refuses (NoRedirect) is an error page, rendered here and nowhere else. */
const page =
  <C extends { request: Request }>(handler: (context: C) => Promise<Response>) =>
  async (context: C): Promise<Response> => {
    try {
      return await handler(context);
    } catch (e) {
      if (e instanceof NoRedirect) return errorPage(e);
      throw e;
    }
  };

/**
 * The authorization endpoint ([RFC 6749 §3.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.1)), opened in the
 * person's browser: GET shows the sign-in page; the sign-in and consent forms post back to the same URL.
 */
export function authorizationRoutes({ server, signIn }: AuthServerEndpointDeps) {
  /** The request checked, then the sign-in page. Nothing is kept until the person signs in. */
  const showSignIn = page(async ({ request }) => {
    const { client, params } = await server.checkRequest(new URL(request.url).searchParams);
    return signInPage(client, params.redirect_uri);
  });

  /** The sign-in form posts back to the authorization request's own URL: the request is checked again. */
  async function signInStep(request: Request, fields: URLSearchParams): Promise<Response> {
    const checked = await server.checkRequest(new URL(request.url).searchParams);
    const { client, params } = checked;
    let user: Principal;
    try {
      user = await signIn(request, fields.get("username") ?? "", fields.get("password") ?? "");
    } catch (e) {
      if (e instanceof Unauthorized) return signInPage(client, params.redirect_uri, "Wrong user name or password.");
      // The failure brake (AUTH__MAX_FAILURES) answers a page, with its Retry-After.
      if (e instanceof TooManyRequests) throw new NoRedirect(e.message, e.status, e.headers);
      throw e;
    }
    const { handle, target } = await server.signedIn(checked, user);
    return consentPage(handle, client, params.redirect_uri, target, user.username);
  }

  /** The consent form: the person's answer goes back to the client. */
  async function consentStep(fields: URLSearchParams): Promise<Response> {
    const handle = fields.get("handle");
    if (!handle) throw new NoRedirect("Sign in first: start again from the application.");
    return seeOther((await server.answer(handle, fields.get("decision") === "allow")).location);
  }

  const answerForm = page(async ({ request }) => {
    const fields = await readPageForm(request);
    const step = fields.get("step");
    if (step === "sign-in") return signInStep(request, fields);
    if (step === "consent") return consentStep(fields);
    throw new NoRedirect("Sign in first: start again from the application.");
  });

  return new Elysia({ detail: { tags: ["Authorization server"] } })
    .get(OAUTH_PATHS.authorize, showSignIn, {
      response: pageResponses,
      detail: {
        summary: "Authorization endpoint (OAuth 2.1 code flow with PKCE S256)",
        description:
          "Opened in the person's browser: signs them in with their account of this service and asks for consent. `resource` (RFC 8707) must be a connector's proxy URL or a virtual server's MCP URL, the person's own (any, for an administrator): the tokens are good there only. Nothing is kept until the person signs in.",
      },
    })
    .post(OAUTH_PATHS.authorize, answerForm, {
      parse: FORM,
      body: FormBody("step=sign-in&username=alice&password=correct+horse+battery"),
      response: {
        ...pageResponses,
        401: Html("HTML page: sign-in again (wrong user name or password)"),
        429: Html("HTML page: too many failed sign-ins from this address"),
      },
      detail: {
        summary: "The sign-in and consent forms of the authorization endpoint",
        description: "Posted by the pages GET shows; not for programs.",
        ...PROTOCOL_ERRORS,
      },
    });
}
