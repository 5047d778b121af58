import { Unauthorized } from "../http-errors/errors";
import type { Brake } from "./failure-limit";
import type { Principal } from "./model";
import type { UserRepository } from "./repository";
import { digestToken, TOKEN_PREFIX } from "./service";
import { USERNAME_PATTERN } from "./model";
import { sha256Hex } from "../secrets/digest";

const USERNAME = new RegExp(USERNAME_PATTERN);

/** The argon2id hash of a password nobody has, checked when a user name is unknown so both paths cost the same. */
const DECOY_HASH =
  "$argon2id$v=19$m=65536,t=2,p=1$AyV+ZkrWwkPSI9kh2t+Mc6VLF7lQdKPTpHib2msItLc$7sy6hvX+4l8JucoyWHST2CkoTAoj3gE5rSUuUARJJ7s";

/** How the service verifies what a client presents: an Authorization header, or a user name and password typed into a page. */
export type Authenticator = {
  /** An Authorization header: HTTP Basic or a Bearer token. */
  header(authorization: string | null, brake: Brake): Promise<Principal>;
  /** A user name and password typed into one of the service's pages: what a Basic header carries, verified the same way. */
  password(username: string, password: string, brake: Brake): Promise<Principal>;
};
/** The principal of a request, authenticated once however many hooks ask (the API's body parser, then its routes). */
export type RequestAuthenticator = (request: Request) => Promise<Principal>;

/**
 * How requests are authenticated: each once (memoized per request), a password under the failure brake of the
 * request's client (failure-limit.ts); tokens and sessions never are.
 */
export function authenticateRequests(
  authenticator: Authenticator,
  brakeFor: (request: Request) => Brake,
  /** The console's session cookie, for a request without an Authorization header (the API only; sessions.ts). */
  session?: (request: Request) => Promise<Principal | undefined>,
): RequestAuthenticator {
  const principals = new WeakMap<Request, Promise<Principal>>();
  const attempt = async (request: Request): Promise<Principal> => {
    const authorization = request.headers.get("authorization");
    if (authorization === null && session) {
      const signedIn = await session(request);
      if (signedIn) return signedIn;
    }
    return authenticator.header(authorization, brakeFor(request));
  };
  return (request) => {
    let principal = principals.get(request);
    if (!principal) {
      principal = attempt(request);
      principals.set(request, principal);
    }
    return principal;
  };
}

type Remembered = { userId: string; passwordHash: string; until: number };

export type AuthenticatorOptions = {
  users: UserRepository;
  clock: () => number;
  /** How long a verified Basic credential is remembered (docs/interface.md §3). */
  rememberMs?: number;
  maxRemembered?: number;
  /** Another kind of bearer token this service issues (its authorization server's access tokens), if it is one. */
  otherBearer?: (token: string) => Promise<Principal | undefined>;
};

/**
 * HTTP Basic (RFC 7617) and Bearer API tokens ([RFC 6750 §2.1](https://www.rfc-editor.org/rfc/rfc6750#section-2.1)). argon2id runs only for a user
 * name and password new to the process; a verified pair is remembered, keyed by a digest of it, and forgotten as
 * soon as the user's password hash changes.
 */
export function createAuthenticator({
  users,
  clock,
  rememberMs = 60_000,
  maxRemembered = 1000,
  otherBearer,
}: AuthenticatorOptions): Authenticator {
  const remembered = new Map<string, Remembered>();
  // Verified against when the username is unknown, so both paths cost one argon2id verification.
  // Made once with Bun's default argon2id parameters (those of every stored hash), so checking against it costs what a
  // real check does; written out rather than hashed at start, which took ~80 ms of a core on every start (bench/RESULTS.md).
  const decoy = DECOY_HASH;

  /** Verifications under way, by the digest of the credential: the same one sent many times at once is verified once. */
  const verifying = new Map<string, Promise<Principal>>();

  async function basic(credentials: string, brake: Brake): Promise<Principal> {
    const decoded = Buffer.from(credentials, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) throw new Unauthorized("The Basic credentials are not of the form username:password");
    return verifyPassword(decoded.slice(0, colon), decoded.slice(colon + 1), brake);
  }

  async function verifyPassword(username: string, password: string, brake: Brake): Promise<Principal> {
    // A name no user can have is not looked up (it may hold what the store cannot take, such as U+0000); all such
    // names share one counter of the brake.
    const valid = USERNAME.test(username);
    const name = valid ? username : "";
    // Refused while the client is braked for this name even when the credential is remembered: else a braked guesser
    // could go on guessing for free, and a right guess (the password its owner just used) would answer 200.
    brake.check(name);
    // Both parts, unambiguously: "a" with "b:c" is not "a:b" with "c".
    const key = sha256Hex(JSON.stringify([username, password]));
    const hit = remembered.get(key);
    if (hit && hit.until > clock()) {
      const user = await users.findById(hit.userId);
      if (user && user.disabled_at === null && safeEqual(user.password_hash, hit.passwordHash)) return principal(user, "basic");
      remembered.delete(key);
    }
    const under = verifying.get(key);
    if (under) return under;
    const attempt = brake.attempt(name);
    const verification = (async () => {
      let wrong = false;
      try {
        const user = valid ? await users.findByUsername(username) : undefined;
        const ok = await Bun.password.verify(password, user?.password_hash ?? decoy);
        // A disabled user's right password is answered (and counted) as a wrong one: anything else tells a guesser it was right.
        if (!user || !ok || user.disabled_at !== null) {
          wrong = true;
          throw new Unauthorized("Wrong username or password");
        }
        if (remembered.size >= maxRemembered) remembered.delete(remembered.keys().next().value!);
        remembered.set(key, { userId: user.id, passwordHash: user.password_hash, until: clock() + rememberMs });
        return principal(user, "basic");
      } finally {
        verifying.delete(key);
        // Not the client's failure when the store failed: its attempt is given back.
        if (wrong) attempt.failed();
        else attempt.succeeded();
      }
    })();
    verifying.set(key, verification);
    return verification;
  }

  async function bearer(token: string): Promise<Principal> {
    if (!token.startsWith(TOKEN_PREFIX)) {
      const other = await otherBearer?.(token);
      if (other) return other;
      throw new Unauthorized("The bearer token is not a valid token of this service");
    }
    const digest = digestToken(token);
    const found = await users.findTokenByDigest(digest);
    if (!found || !safeEqual(found.token_digest, digest)) throw new Unauthorized("Unknown or revoked API token");
    if (found.expires_at !== null && found.expires_at <= clock()) throw new Unauthorized("The API token has expired");
    // Said plainly, unlike for a password: a token is 256 random bits, so only its holder learns this, and an agent's
    // operator needs to know why it stopped working.
    if (found.disabled_at !== null) throw new Unauthorized("This user is disabled");
    return principal(found, `token:${found.token_id}`);
  }

  return {
    async header(authorization, brake) {
      if (!authorization) throw new Unauthorized("This endpoint needs HTTP Basic credentials or a Bearer API token");
      const space = authorization.indexOf(" ");
      const scheme = authorization.slice(0, space).toLowerCase();
      const value = authorization.slice(space + 1).trim();
      if (space > 0 && value && scheme === "basic") return basic(value, brake);
      if (space > 0 && value && scheme === "bearer") return bearer(value);
      throw new Unauthorized("The Authorization header must use the Basic or Bearer scheme");
    },
    password: verifyPassword,
  };
}

function principal(user: { id: string; username: string; role: "admin" | "user" }, credential: string): Principal {
  return { id: user.id, username: user.username, role: user.role, credential };
}

/** Constant-time for strings of equal length (both sides here are fixed-length digests or PHC strings). */
function safeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
