import { Elysia, t } from "elysia";
import { NotFound } from "../http-errors/errors";
import { Problem } from "../http-errors/model";
import type { ApiBodyPlugin } from "../http/json-body";
import type { AuthPlugin } from "./auth-plugin";
import { SessionView, SignInBody, type Principal } from "./model";
import type { UserService } from "./service";
import type { Sessions } from "./sessions";

export type SessionRouteDeps = {
  sessions: Sessions;
  users: UserService;
  /** Checks a user name and password under the failure brake (AUTH__MAX_FAILURES), as Basic would. */
  signIn(request: Request, username: string, password: string): Promise<Principal>;
  /** SERVER__PUBLIC_URL: the console shows proxy URLs from it, whatever name it was opened at. */
  publicUrl: () => string;
};

/** The web console's sign-in: a session cookie for the API (sessions.ts says how it is protected). */
export function sessionRoutes(
  { sessions, users, signIn, publicUrl }: SessionRouteDeps,
  auth: AuthPlugin,
  anonymousBody: ApiBodyPlugin,
) {
  const view = async (principal: Principal, csrf_token: string, expires_at: number) => ({
    user: await users.me(principal),
    csrf_token,
    expires_at: new Date(expires_at).toISOString(),
    public_url: publicUrl(),
  });
  return new Elysia({ prefix: "/api/v1/session", detail: { tags: ["Console session"] } })
    .use(auth)
    .use(anonymousBody)
    .post(
      "",
      async ({ request, body, set }) => {
        const principal = await signIn(request, body.username, body.password);
        const started = await sessions.start(principal.id);
        set.status = 201;
        set.headers["set-cookie"] = started.setCookie;
        set.headers["cache-control"] = "no-store";
        return view(principal, started.csrf_token, started.expires_at);
      },
      {
        body: SignInBody,
        response: { 201: SessionView, 401: Problem, 422: Problem, 429: Problem },
        detail: {
          summary: "Sign in to the console",
          description:
            "Sets the session cookie (__Host-cs_session: HttpOnly, SameSite=Strict, Secure; plain cs_session without Secure when the service is plain http to a host other than loopback; 12 hours). The API then accepts it in place of Basic or a token; every change made with it must carry the answer's csrf_token as X-CSRF-Token and come from this service's origin. Wrong passwords count toward AUTH__MAX_FAILURES (per user name and address).",
          security: [],
        },
      },
    )
    .get(
      "",
      async ({ request, set }) => {
        const session = await sessions.principal(request);
        // Signed in another way (Basic, a token): there is no session to describe.
        if (!session) throw new NotFound("This request carries no console session");
        set.headers["cache-control"] = "no-store";
        return view(session, session.csrf_token, session.expires_at);
      },
      {
        auth: true,
        response: { 200: SessionView, 401: Problem, 404: Problem },
        detail: { summary: "The console session: who is signed in, and its CSRF token" },
      },
    )
    .delete(
      "",
      async ({ request, set }) => {
        set.headers["set-cookie"] = await sessions.end(request);
        set.status = 204;
      },
      {
        auth: true,
        response: { 204: t.Void(), 401: Problem, 403: Problem },
        detail: { summary: "Sign out of the console", description: "Ends the session and clears its cookie." },
      },
    );
}
