import { isIP } from "node:net";
import { TooManyRequests } from "../http-errors/errors";
import { ipv6Groups } from "../security/addresses";

export type FailureLimitOptions = {
  clock: () => number;
  /** Wrong passwords one user name may get from one client address per window (AUTH__MAX_FAILURES). */
  maxFailures: number;
  /** Wrong passwords one client address may give per window, whatever the user names (AUTH__MAX_FAILURES_PER_ADDRESS). */
  maxAddressFailures: number;
  windowMs: number;
  /** How many counters are kept at most; the oldest windows go first. */
  maxEntries?: number;
};

/** One password verification under the brake, counted from before it starts: settle it once, with its result. */
export type Attempt = { succeeded(): void; failed(): void };

/** The failure brake for one request's client. */
export type Brake = {
  /**
   * Before a password for `username` is verified: throws 429 while this client is over a limit, else takes one of
   * its attempts (pending until settled, so concurrent guesses cannot all pass a check made before any failed).
   */
  attempt(username: string): Attempt;
  /** Throws 429 while this client is over a limit for `username`; takes nothing (for a credential already verified). */
  check(username: string): void;
};

/** No brake: for a credential checked again that was verified when its stream opened (access-watch.ts), never for a guess. */
export const UNBRAKED: Brake = { attempt: () => ({ succeeded() {}, failed() {} }), check() {} };

type Counter = { failures: number; pending: number; until: number };

/**
 * A brake on password guessing, for password verification only (Basic, the sign-in pages, the current password of a
 * password change): never for tokens or sessions, which are 256 random bits, not guessed. Two counters per window:
 * per (client address, user name) at `maxFailures`, so one user's guesser never locks out another user's password from
 * the same address (a NAT, an office); and per client address at the much higher `maxAddressFailures`, against one
 * address trying a few passwords for each of many user names. Over either, 429 with Retry-After until the window
 * ends, before any password is verified — guessing costs no argon2id time either. IPv6 clients count by their /64,
 * the block one end site gets ([RFC 6177](https://www.rfc-editor.org/rfc/rfc6177)), or a single host could be millions of addresses.
 *
 * Fixed windows, in memory; a counter goes when its window ends, or at once when it counted no failure, so
 * once no window is open a check looks nothing up at all.
 */
export function createFailureLimit({
  clock,
  maxFailures,
  maxAddressFailures,
  windowMs,
  maxEntries = 50_000,
}: FailureLimitOptions) {
  /** In the order their windows end: a window starts when its counter is made, and every window lasts `windowMs`. */
  const counters = new Map<string, Counter>();
  const expire = (now: number) => {
    for (const [key, counter] of counters) {
      if (counter.until > now) return;
      counters.delete(key);
    }
  };
  const open = (key: string, now: number): Counter => {
    let counter = counters.get(key);
    if (!counter) {
      if (counters.size >= maxEntries) counters.delete(counters.keys().next().value!);
      counter = { failures: 0, pending: 0, until: now + windowMs };
      counters.set(key, counter);
    }
    return counter;
  };
  const forgetIfEmpty = (key: string, counter: Counter) => {
    if (counter.failures === 0 && counter.pending === 0 && counters.get(key) === counter) counters.delete(key);
  };
  const refuse = (counter: Counter, now: number, what: string): never => {
    const seconds = Math.max(1, Math.ceil((counter.until - now) / 1000));
    throw new TooManyRequests(`Too many wrong passwords ${what}: try again in ${seconds} s`, seconds);
  };
  const keysOf = (address: string, username: string) => {
    const client = clientKey(address);
    return { address: `a ${client}`, user: `u ${client} ${username}` };
  };

  function check(address: () => string, username: string): void {
    // No window open: nothing to look up, not even the address (the proxy's hot path).
    if (counters.size === 0) return;
    const now = clock();
    expire(now);
    if (counters.size === 0) return;
    const keys = keysOf(address(), username);
    const user = counters.get(keys.user);
    if (user && user.failures >= maxFailures) refuse(user, now, "for this user name from this address");
    const all = counters.get(keys.address);
    if (all && all.failures >= maxAddressFailures) refuse(all, now, "from this address");
  }

  function attempt(address: string, username: string): Attempt {
    const now = clock();
    expire(now);
    const keys = keysOf(address, username);
    const user = open(keys.user, now);
    const all = open(keys.address, now);
    if (user.failures + user.pending >= maxFailures || all.failures + all.pending >= maxAddressFailures) {
      forgetIfEmpty(keys.user, user);
      forgetIfEmpty(keys.address, all);
      if (user.failures + user.pending >= maxFailures) refuse(user, now, "for this user name from this address");
      refuse(all, now, "from this address");
    }
    user.pending++;
    all.pending++;
    let settled = false;
    const settle = (failed: boolean) => {
      if (settled) return;
      settled = true;
      const now = clock();
      expire(now);
      for (const [key, counter] of [
        [keys.user, user],
        [keys.address, all],
      ] as const) {
        counter.pending--;
        if (!failed) forgetIfEmpty(key, counter);
        // Its window ended (or it was pushed out) while the password was verified: the failure opens a new one.
        else if (counters.get(key) === counter) counter.failures++;
        else open(key, now).failures++;
      }
    };
    return { succeeded: () => settle(false), failed: () => settle(true) };
  }

  return {
    /** The brake of one request's client; its address (`unknown` when there is none) is looked up once, when needed. */
    brake(address: () => string | undefined): Brake {
      let client: string | undefined;
      const lookedUp = () => (client ??= address() ?? "unknown");
      return { attempt: (username) => attempt(lookedUp(), username), check: (username) => check(lookedUp, username) };
    },
    /** How many counters are kept now (for tests). */
    remembered: () => counters.size,
  };
}
export type FailureLimit = ReturnType<typeof createFailureLimit>;

/** An IPv6 address by its /64; anything else as it is. */
function clientKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  return groups
    ? `${groups
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(":")}::/64`
    : address;
}
