import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { Forbidden, Unauthorized } from "../http-errors/errors";
import { ownOriginOf } from "../http/cross-site";
import type { Principal } from "./model";
import type { UserRepository } from "./repository";
import type { Job } from "../scheduler/scheduler";
import { sha256Hex } from "../secrets/digest";

/**
 * The console's session cookie for the service at `publicUrl`: HttpOnly and SameSite=Strict always, and where the
 * browser takes a Secure cookie — https, and http to localhost or a loopback address (potentially trustworthy origins,
 * [Secure Contexts §3.1](https://www.w3.org/TR/secure-contexts/#is-origin-trustworthy)) — Secure under the `__Host-` prefix, which a browser accepts only with Secure, Path=/ and no
 * Domain ([RFC 6265bis §4.1.3.2](https://datatracker.ietf.org/doc/html/draft-ietf-httpbis-rfc6265bis#section-4.1.3.2)): no sibling host and no plain-http page can then set or overwrite it (planting
 * their own session on the person). Over plain http to any other host a browser would drop a Secure cookie: there it is
 * `cs_session` without Secure, and start-up warns that the console is not protected.
 */
export function sessionCookie(publicUrl: string): { name: string; secure: boolean } {
  const url = new URL(publicUrl);
  const host = url.hostname.toLowerCase();
  const loopback =
    host === "localhost" || host.endsWith(".localhost") || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  return url.protocol === "https:" || loopback
    ? { name: "__Host-cs_session", secure: true }
    : { name: "cs_session", secure: false };
}
/** How long a console sign-in lasts; signing in again starts a new one. */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** The header a change made with a session must carry: the session's CSRF token (GET /api/v1/session gives it). */
export const CSRF_HEADER = "x-csrf-token";

/** Methods that change something: with a session, they need the CSRF token and a same-origin request. */
const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

const digest = sha256Hex;

export type SessionsDeps = { users: UserRepository; clock: () => number; publicUrl: () => string };

/**
 * Console sessions. The cookie holds 256 random bits; the store keeps their digest. Cross-site request forgery is
 * refused three ways: the cookie is SameSite=Strict (browsers do not send it from another site), a change must carry
 * the session's CSRF token in a header (which another origin cannot set without a CORS preflight the API never
 * grants), and a change whose Origin is not the service's is refused ([OWASP CSRF cheat sheet](https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html):
 * synchronizer token, Origin verification).
 */
export function createSessions({ users, clock, publicUrl }: SessionsDeps) {
  /** The CSRF token of a session, derived from its secret (nothing more to store or leak). */
  const csrfOf = (secret: string) => createHash("sha256").update(`csrf:${secret}`).digest("base64url");
  const cookie = (value: string, maxAgeSeconds: number) => {
    const { name, secure } = sessionCookie(publicUrl());
    return `${name}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`;
  };

  const secretOf = (request: Request) => secretIn(request.headers.get("cookie"));
  /** The session's secret, from the cookie of this name only: under `__Host-`, a plain `cs_session` someone planted is no session. */
  function secretIn(header: string | null): string | undefined {
    if (!header) return undefined;
    const { name } = sessionCookie(publicUrl());
    for (const part of header.split(";")) {
      const eq = part.indexOf("=");
      if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
    }
    return undefined;
  }

  /** The session's user; a cookie that is unknown or expired, or a disabled user, is a 401. */
  async function signedIn(secret: string) {
    const row = await users.findSession(digest(secret));
    if (!row || row.expires_at <= clock()) throw new Unauthorized("Your console session has ended: sign in again");
    if (row.disabled_at !== null) throw new Unauthorized("This user is disabled");
    return row;
  }

  async function personOf(cookie: string | null): Promise<Principal | undefined> {
    const secret = secretIn(cookie);
    if (secret === undefined) return undefined;
    const row = await signedIn(secret);
    return { id: row.id, username: row.username, role: row.role, credential: "session" };
  }

  /**
   * Whether a change's `Origin` is a page of this service: the public URL's origin, or — so that the console works at
   * any name that reaches the service (opened at `localhost` while SERVER__PUBLIC_URL says 127.0.0.1) — the request's
   * own origin (its scheme and Host) when the browser also says `Sec-Fetch-Site: same-origin` (a header no page can set,
   * [Fetch Metadata §2.1](https://www.w3.org/TR/fetch-metadata/#sec-fetch-site-header)). Nothing ambient comes with
   * that: the cookie is host-only (no Domain), so the one a browser sends to a name was set by the service at that
   * name; a page that reached the service under a name of its own (DNS rebinding) holds no session of the person's.
   */
  const ownPage = (request: Request, origin: string) =>
    origin === new URL(publicUrl()).origin ||
    (request.headers.get("sec-fetch-site") === "same-origin" && origin === ownOriginOf(request));

  const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

  return {
    /** Signs `userId` in: the Set-Cookie value and what the console needs to make changes. */
    async start(userId: string) {
      const secret = randomBytes(32).toString("base64url");
      const now = clock();
      await users.insertSession({ digest: digest(secret), user_id: userId, expires_at: now + SESSION_TTL_MS, created_at: now });
      return { setCookie: cookie(secret, SESSION_TTL_MS / 1000), csrf_token: csrfOf(secret), expires_at: now + SESSION_TTL_MS };
    },

    /**
     * The person a request's session cookie signs in, undefined without one. A cookie that is unknown or expired is a
     * 401; a change without the session's CSRF token, or from another origin, a 403.
     */
    async principal(
      request: Request,
    ): Promise<(Principal & { csrf_token: string; session: string; expires_at: number }) | undefined> {
      const secret = secretOf(request);
      if (secret === undefined) return undefined;
      const row = await signedIn(secret);
      const csrf = csrfOf(secret);
      if (UNSAFE.has(request.method)) {
        const origin = request.headers.get("origin");
        if (origin !== null && !ownPage(request, origin))
          throw new Forbidden(
            `A change with a console session must come from ${new URL(publicUrl()).origin}, not ${origin.slice(0, 200)}`,
          );
        const sent = request.headers.get(CSRF_HEADER);
        if (sent === null || !same(sent, csrf))
          throw new Forbidden(`A change with a console session needs the session's ${CSRF_HEADER} header`);
      }
      return {
        id: row.id,
        username: row.username,
        role: row.role,
        credential: "session",
        csrf_token: csrf,
        session: row.digest,
        expires_at: row.expires_at,
      };
    },

    /**
     * The console's own requests at a connector's proxy URL ("Try it"), so that they pass the same admission, policy
     * and audit as any MCP client's. Only a request that proves it comes from the console's page: the browser says
     * `Sec-Fetch-Site: same-origin` and it carries the session's CSRF token — on every method, reads included, as no
     * MCP client sends either. Anything else with the cookie is no session here (undefined: the Authorization header
     * decides, and without one it is a 401), so a cookie is never an ambient credential at the proxy: not from another
     * site (SameSite=Strict withholds it, Sec-Fetch-Site says so), not from a form or a link (no CSRF header).
     */
    async fromConsolePage(request: Request): Promise<Principal | undefined> {
      if (request.headers.get("sec-fetch-site") !== "same-origin") return undefined;
      const sent = request.headers.get(CSRF_HEADER);
      const secret = secretOf(request);
      if (sent === null || secret === undefined) return undefined;
      const row = await signedIn(secret);
      if (!same(sent, csrfOf(secret)))
        throw new Forbidden(`A request with a console session needs the session's ${CSRF_HEADER} header`);
      return { id: row.id, username: row.username, role: row.role, credential: "session" };
    },

    /**
     * The person a request's session cookie signs in, for a page's own form whose fields carry a single-use secret
     * of their own (the OAuth callback's confirmation): no CSRF header, which a form cannot send. Throws as `principal`.
     */
    person: (request: Request) => personOf(request.headers.get("cookie")),

    /** The same for a Cookie header alone: a long-lived stream's, checked again (access-watch.ts). */
    personOf,

    /** Ends the request's session, if any; the Set-Cookie value that clears it. */
    async end(request: Request): Promise<string> {
      const secret = secretOf(request);
      if (secret !== undefined) await users.deleteSession(digest(secret));
      return cookie("", 0);
    },

    /** The scheduler's: ended sessions go. */
    job: { name: "expire-console-sessions", run: async () => void (await users.deleteExpiredSessions(clock())) } satisfies Job,
  };
}
export type Sessions = ReturnType<typeof createSessions>;
