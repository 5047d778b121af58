import { InvalidToken, Unauthorized } from "../http-errors/errors";
import type { StreamCredential } from "./access-watch";
import { authenticateRequests, createAuthenticator } from "./authenticate";
import { UNBRAKED, type Brake, type FailureLimit } from "./failure-limit";
import type { Principal } from "./model";
import type { UserRepository } from "./repository";
import type { Sessions } from "./sessions";

export type AuthenticationDeps = {
  users: UserRepository;
  clock: () => number;
  /** The brake on wrong passwords (AUTH__MAX_FAILURES, AUTH__MAX_FAILURES_PER_ADDRESS). */
  failureLimit: FailureLimit;
  /** The address a request came from, for the brake. */
  clientAddress: (request: Request) => string | undefined;
  sessions: Pick<Sessions, "principal" | "personOf" | "fromConsolePage">;
  /** The access tokens of the service's own authorization server (oauth-server/): those that start with `prefix`. */
  accessTokens: { prefix: string; verify(token: string): Promise<Principal | undefined> };
};

/**
 * Which credentials each way in accepts:
 * - the API: HTTP Basic, API tokens, and the console's session cookie — never an access token of the authorization
 *   server, which is good at one connector's MCP proxy URL or one virtual server's MCP URL only;
 * - the MCP proxy and virtual servers: HTTP Basic, API tokens and those access tokens (each checked against the URL
 *   it is for: proxy/admit.ts, virtual-servers/endpoint.ts); the console's cookie only from the console's own
 *   page with the session's CSRF token ("Try it", sessions.ts `fromConsolePage`) — MCP clients send none;
 * - the sign-in pages (the console, the authorization server's, the OAuth callback's): a user name and password;
 * - a long-lived stream, checked again while it is open: what it was opened with.
 * Every password is verified under the failure brake of the request's client, but a stream's, verified when it opened.
 */
export function createAuthentication({ users, clock, failureLimit, clientAddress, sessions, accessTokens }: AuthenticationDeps) {
  const authenticator = createAuthenticator({
    users,
    clock,
    // An expired or revoked access token is an invalid_token ([RFC 6750 §3.1](https://www.rfc-editor.org/rfc/rfc6750#section-3.1)),
    // the client's cue to refresh. No token counts toward AUTH__MAX_FAILURES: 256 random bits are not guessed, and a
    // client racing its refresh must not lock itself out.
    otherBearer: async (token) => {
      if (!token.startsWith(accessTokens.prefix)) return undefined;
      const principal = await accessTokens.verify(token);
      if (!principal) throw new InvalidToken("The access token has expired or was revoked: refresh it, or authorize again");
      return principal;
    },
  });
  /** The failure brake for the client of one request: its address, and its wrong passwords (AUTH__MAX_FAILURES). */
  const brakeFor = (request: Request): Brake => failureLimit.brake(() => clientAddress(request));
  const withSession = authenticateRequests(authenticator, brakeFor, (request) => sessions.principal(request));

  return {
    /** The API's. */
    async api(request: Request): Promise<Principal> {
      const principal = await withSession(request);
      // RFC 8707 §2: an access token is for the one resource it was issued for, never the API.
      if (principal.connector !== undefined || principal.boundVirtualServer !== undefined)
        throw new Unauthorized("This access token is for one connector's or virtual server's MCP URL only, not for the API");
      return principal;
    },
    /** The MCP proxy's. */
    proxy: authenticateRequests(authenticator, brakeFor, (request) => sessions.fromConsolePage(request)),
    /** A user name and password typed into one of the service's pages: a Basic credential in all but name, under the same brake. */
    signIn: (request: Request, username: string, password: string) =>
      authenticator.password(username, password, brakeFor(request)),
    brakeFor,
    /** A stream's credential authenticated again as a request would be (access-watch.ts), the password without the brake. */
    recheck: ({ authorization, cookie }: StreamCredential): Promise<Principal | undefined> =>
      authorization === null ? sessions.personOf(cookie) : authenticator.header(authorization, UNBRAKED),
  };
}
export type Authentication = ReturnType<typeof createAuthentication>;
