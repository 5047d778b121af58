import { Value } from "@sinclair/typebox/value";
import { Elysia, t } from "elysia";
import { PROTOCOL_ERRORS } from "../docs/plugin";
import { NotFound, TooManyRequests, Unauthorized } from "../http-errors/errors";
import { Problem } from "../http-errors/model";
import { readCapped } from "../http/read-capped";
import { IdParams } from "../http/params";
import type { Cors } from "../http/cors";
import type { AuthPlugin } from "../users/auth-plugin";
import type { Principal } from "../users/model";
import { ClientRefused, TooManyRegistrations, type Clients } from "./clients";
import { OAUTH_PATHS, RegistrationBody } from "./model";
import { consentPage, errorPage, signInPage } from "./pages";
import { grantedScope, SCOPES_SUPPORTED } from "./scope";
import { NoRedirect, OAuthError, type AuthServer, type CheckedRequest } from "./service";

/** OAuth requests are small: forms and registration documents beyond this are refused unread. */
const MAX_OAUTH_BODY_BYTES = 16 * 1024;

/** [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2) error answers, never cached ([§5.1](https://www.rfc-editor.org/rfc/rfc6749#section-5.1)). */
const oauthJson = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      pragma: "no-cache",
      "x-content-type-options": "nosniff",
      ...headers,
    },
  });
const oauthError = (e: OAuthError) => oauthJson({ error: e.error, error_description: e.description }, e.status);
const seeOther = (location: string) =>
  new Response(null, { status: 303, headers: { location, "cache-control": "no-store", "x-content-type-options": "nosniff" } });

/** A small body read under the cap; undefined when over it. */
async function smallBody(request: Request): Promise<string | undefined> {
  if (Number(request.headers.get("content-length") ?? "0") > MAX_OAUTH_BODY_BYTES) return undefined;
  return (await readCapped(request.body, MAX_OAUTH_BODY_BYTES))?.toString("utf8") ?? (request.body ? undefined : "");
}

/** [RFC 6749 §3.2](https://www.rfc-editor.org/rfc/rfc6749#section-3.2): token and revocation requests are forms. */
async function form(request: Request): Promise<URLSearchParams> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(request.headers.get("content-type") ?? "")) {
    throw new OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded");
  }
  const text = await smallBody(request);
  if (text === undefined) throw new OAuthError("invalid_request", `the body is larger than ${MAX_OAUTH_BODY_BYTES} bytes`);
  const params = new URLSearchParams(text);
  // [RFC 6749 §3.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.1): parameters must not be repeated.
  for (const key of new Set(params.keys()))
    if (params.getAll(key).length > 1) throw new OAuthError("invalid_request", `${key} is repeated`);
  return params;
}

const Json = t.Record(t.String(), t.Unknown());
const OAuthErrorBody = t.Object(
  { error: t.String(), error_description: t.Optional(t.String()) },
  { description: "An OAuth error (RFC 6749 §5.2)" },
);
const Html = (description: string) => t.String({ description, contentMediaType: "text/html" });
const pageResponses = {
  200: Html("HTML page: sign-in, consent"),
  303: t.Void({
    description:
      "Back to the client's redirect URI, with code or error, state and iss: only once the person signed in and answered",
  }),
  400: Html("HTML page naming the error: a request is never redirected before the person answered (RFC 9700 §4.11.2)"),
};
const FormBody = t.Any({ description: "application/x-www-form-urlencoded, as the OAuth RFCs define this endpoint's parameters" });
const FORM: [() => null, "application/x-www-form-urlencoded"] = [() => null, "application/x-www-form-urlencoded"];
const JSON_UNREAD: [() => null, "application/json"] = [() => null, "application/json"];

export type AuthServerRouteDeps = {
  server: AuthServer;
  clients: Clients;
  /** Checks a person's user name and password on the sign-in page (the failure brake applies). */
  signIn(request: Request, username: string, password: string): Promise<Principal>;
  /** What browser-based MCP clients call across origins: the documents and the token, registration and revocation endpoints. */
  cors: Cors;
  /** The address a request came from: registrations are bounded per address. */
  clientAddress(request: Request): string | undefined;
};

/** The paths browser-based clients call across origins, and their methods (the authorization endpoint is a page: not one). */
const CROSS_ORIGIN: Record<string, string> = {
  "/.well-known/oauth-authorization-server": "GET",
  "/.well-known/oauth-protected-resource": "GET",
  "/.well-known/oauth-protected-resource/api/v1/connectors/:id/mcp": "GET",
  [OAUTH_PATHS.register]: "POST",
  [OAUTH_PATHS.token]: "POST",
  [OAUTH_PATHS.revoke]: "POST",
};

/** The authorization server's endpoints and discovery documents, and the grants API. */
export function authServerRoutes({ server, clients, signIn, cors, clientAddress }: AuthServerRouteDeps, auth: AuthPlugin) {
  /** A handler whose answers carry the CORS headers. */
  const crossOrigin =
    <C extends { request: Request }>(handler: (context: C) => Response | Promise<Response>) =>
    async (context: C) =>
      cors.decorate(context.request, await handler(context));
  const discovery = crossOrigin(() => oauthJson(server.metadata()));
  const preflights = new Elysia({ detail: { tags: ["Authorization server"] } });
  for (const [path, methods] of Object.entries(CROSS_ORIGIN)) {
    preflights.options(path, ({ request }) => cors.preflight(request, methods), {
      response: { 204: t.Void({ description: "Allowed: the CORS headers say for how long" }), 403: Problem },
      detail: {
        summary: `CORS preflight of ${path}`,
        description: "For browser-based MCP clients; allowed origins are CORS__ALLOWED_ORIGINS.",
        security: [],
      },
    });
  }
  return new Elysia({ detail: { tags: ["Authorization server"] } })
    .use(auth)
    .use(preflights)
    .get("/.well-known/oauth-authorization-server", discovery, {
      response: { 200: Json },
      detail: {
        summary: "Authorization server metadata (RFC 8414)",
        description:
          "Where MCP clients find the endpoints to sign a person in for a connector's proxy URL. Not OpenID Connect: there is no ID token, so /.well-known/openid-configuration is a 404.",
      },
    })
    .get(
      "/.well-known/oauth-protected-resource/api/v1/connectors/:id/mcp",
      crossOrigin(({ params }: { request: Request; params: { id: string } }) => oauthJson(server.resourceMetadata(params.id))),
      {
        params: IdParams,
        response: { 200: Json },
        detail: {
          summary: "Protected resource metadata of a connector's proxy URL (RFC 9728)",
          description: "Names this service as the authorization server.",
        },
      },
    )
    .get(
      "/.well-known/oauth-protected-resource",
      crossOrigin(() =>
        oauthJson({
          resource: server.issuer(),
          authorization_servers: [server.issuer()],
          bearer_methods_supported: ["header"],
          scopes_supported: SCOPES_SUPPORTED,
        }),
      ),
      {
        response: { 200: Json },
        detail: {
          summary: "Protected resource metadata, root form",
          description: "Tokens are for one connector's proxy URL: read the path-specific document the 401 names.",
        },
      },
    )
    .post(
      OAUTH_PATHS.register,
      crossOrigin(async ({ request }) => {
        const text = await smallBody(request);
        const refuse = (description: string, error = "invalid_client_metadata") =>
          oauthJson({ error, error_description: description }, 400);
        if (text === undefined) return refuse(`the registration is larger than ${MAX_OAUTH_BODY_BYTES} bytes`);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          return refuse("the registration is not JSON");
        }
        if (!Value.Check(RegistrationBody, body)) {
          const first = Value.Errors(RegistrationBody, body).First();
          return refuse(`${first?.path || "body"}: ${first?.message ?? "is not valid"}`);
        }
        try {
          const client = await clients.register(body, clientAddress(request));
          // [RFC 7591 §3.2.1](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.1): the client's id and the metadata as registered (the scope it may be granted, whatever it asked).
          return oauthJson(
            {
              client_id: client.client_id,
              client_id_issued_at: Math.floor(client.created_at / 1000),
              token_endpoint_auth_method: "none",
              grant_types: ["authorization_code", "refresh_token"],
              response_types: ["code"],
              scope: grantedScope(body.scope ?? null),
              ...client.metadata,
            },
            201,
          );
        } catch (e) {
          if (e instanceof TooManyRegistrations)
            return oauthJson({ error: "temporarily_unavailable", error_description: e.message }, 429, {
              "retry-after": String(e.retryAfterSeconds),
            });
          if (e instanceof ClientRefused) return refuse(e.message, "invalid_redirect_uri");
          throw e;
        }
      }),
      {
        parse: JSON_UNREAD,
        body: t.Any({
          description:
            "Client metadata (RFC 7591 §2): redirect_uris required; only public clients (token_endpoint_auth_method none)",
        }),
        response: { 201: Json, 400: OAuthErrorBody, 429: OAuthErrorBody },
        detail: {
          summary: "Register an MCP client (RFC 7591)",
          description:
            "No credentials: any client may register. Registrations never used expire after a day; their number is capped per client address (AUTHSERVER__MAX_REGISTRATIONS_PER_ADDRESS) and in all (AUTHSERVER__MAX_REGISTRATIONS): 429 with Retry-After beyond.",
          ...PROTOCOL_ERRORS,
        },
      },
    )
    .get(
      OAUTH_PATHS.authorize,
      async ({ request }) => {
        try {
          const { client, params } = await server.begin(new URL(request.url).searchParams);
          return signInPage(client, params.redirect_uri);
        } catch (e) {
          if (e instanceof NoRedirect) return errorPage(e.message);
          throw e;
        }
      },
      {
        response: pageResponses,
        detail: {
          summary: "Authorization endpoint (OAuth 2.1 code flow with PKCE S256)",
          description:
            "Opened in the person's browser: signs them in with their account of this service and asks for consent. `resource` (RFC 8707) must be a connector's proxy URL. Nothing is kept until the person signs in.",
        },
      },
    )
    .post(
      OAUTH_PATHS.authorize,
      async ({ request }) => {
        const text = await smallBody(request);
        if (text === undefined) return errorPage("The form is too large.", 413);
        const fields = new URLSearchParams(text);
        const step = fields.get("step");
        if (step === "sign-in") {
          // The sign-in form posts back to the authorization request's own URL: the request is checked again.
          let checked: CheckedRequest;
          try {
            checked = await server.begin(new URL(request.url).searchParams);
          } catch (e) {
            if (e instanceof NoRedirect) return errorPage(e.message);
            throw e;
          }
          let user: Principal;
          try {
            user = await signIn(request, fields.get("username") ?? "", fields.get("password") ?? "");
          } catch (e) {
            if (e instanceof Unauthorized)
              return signInPage(checked.client, checked.params.redirect_uri, "Wrong user name or password.");
            if (e instanceof TooManyRequests) return errorPage(e.message, 429);
            throw e;
          }
          const { handle, connector } = await server.signedIn(checked, user.id);
          const shown =
            connector && (connector.owner_id === user.id || user.role === "admin")
              ? { name: connector.metadata.name ?? connector.url, url: connector.url }
              : { name: "a connector that is not yours", url: "the request will be refused" };
          return consentPage(handle, checked.client, checked.params.redirect_uri, shown, user.username);
        }
        const handle = fields.get("handle");
        if (step !== "consent" || !handle) return errorPage("Sign in first: start again from the application.");
        try {
          const answered = await server.answer(handle, fields.get("decision") === "allow");
          return seeOther(answered.location);
        } catch (e) {
          if (e instanceof NoRedirect) return errorPage(e.message);
          throw e;
        }
      },
      {
        parse: FORM,
        body: FormBody,
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
      },
    )
    .post(
      OAUTH_PATHS.token,
      crossOrigin(async ({ request }) => {
        try {
          return oauthJson(await server.token(await form(request)));
        } catch (e) {
          if (e instanceof OAuthError) return oauthError(e);
          throw e;
        }
      }),
      {
        parse: FORM,
        body: FormBody,
        response: { 200: Json, 400: OAuthErrorBody, 401: OAuthErrorBody },
        detail: {
          summary: "Token endpoint: code and refresh token grants (RFC 6749 §4.1.3, §6)",
          description: "Public clients: client_id and the PKCE code_verifier; refresh tokens rotate.",
          ...PROTOCOL_ERRORS,
        },
      },
    )
    .post(
      OAUTH_PATHS.revoke,
      crossOrigin(async ({ request }) => {
        try {
          await server.revoke(await form(request));
          return new Response(null, { status: 200, headers: { "cache-control": "no-store" } });
        } catch (e) {
          if (e instanceof OAuthError) return oauthError(e);
          throw e;
        }
      }),
      {
        parse: FORM,
        body: FormBody,
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
      },
    )
    .group("/api/v1/grants", { detail: { tags: ["Grants"] } }, (grants) =>
      grants
        .get(
          "",
          async ({ principal }) => ({
            items: (await server.grantsOf(principal.id)).map((g) => ({
              id: g.id,
              client_id: g.client_id,
              connector_id: g.connector_id,
              scope: g.scope,
              created_at: new Date(g.created_at).toISOString(),
              last_used_at: g.last_used_at === null ? null : new Date(g.last_used_at).toISOString(),
            })),
          }),
          {
            auth: true,
            response: { 200: GrantList, 401: Problem },
            detail: {
              summary: "What you allowed MCP clients to reach",
              description: "Each grant: the client, the connector, when it was given and last used.",
            },
          },
        )
        .delete(
          "/:id",
          async ({ principal, params, set }) => {
            if (!(await server.revokeGrant(principal.id, params.id))) throw new NotFound(`No grant ${params.id}`);
            set.status = 204;
          },
          {
            auth: true,
            params: IdParams,
            response: { 204: t.Void(), 401: Problem, 404: Problem },
            detail: {
              summary: "Revoke a grant",
              description: "The client's tokens stop working at once (in every replica within a second).",
            },
          },
        ),
    );
}

const GrantList = t.Object({
  items: t.Array(
    t.Object({
      id: t.String(),
      client_id: t.String(),
      connector_id: t.String(),
      scope: t.Union([t.String(), t.Null()]),
      created_at: t.String({ format: "date-time" }),
      last_used_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
    }),
  ),
});
