import { TooManyRequests } from "../http-errors/errors";

export type FailureLimitOptions = {
  clock: () => number;
  /** Failed authentications a client may make per window (AUTH__MAX_FAILURES). */
  maxFailures: number;
  windowMs: number;
  /** How many clients are remembered at most; the oldest windows go first. */
  maxClients?: number;
};

/** The failure brake for one request's client: refuse it if it is over its limit; count a failed authentication. */
export type Brake = { check(): void; failed(): void };

/**
 * A brake on credential guessing: a client (by its address) that failed to authenticate `maxFailures` times within a
 * window is refused with 429 and Retry-After until the window ends — before any password is verified, so guessing
 * costs the service no argon2id time either. Fixed windows per client, in memory; a client is forgotten when its window
 * ends, so once no window is open the hot path looks no address up at all.
 */
export function createFailureLimit({ clock, maxFailures, windowMs, maxClients = 10_000 }: FailureLimitOptions) {
  /** In the order their windows end: a window starts when it is set, and every window lasts `windowMs`. */
  const clients = new Map<string, { failures: number; until: number }>();
  /** Forgets the clients whose windows have ended (they are at the front). */
  const expire = (now: number) => {
    for (const [client, entry] of clients) {
      if (entry.until > now) return;
      clients.delete(client);
    }
  };
  /** Throws 429 while `client` is over its limit. */
  const check = (client: () => string): void => {
    // No window open, no address looked up (the proxy's hot path).
    if (clients.size === 0) return;
    const now = clock();
    expire(now);
    const entry = clients.size > 0 ? clients.get(client()) : undefined;
    if (!entry || entry.failures < maxFailures) return;
    const seconds = Math.max(1, Math.ceil((entry.until - now) / 1000));
    throw new TooManyRequests(`Too many failed authentications from this client: try again in ${seconds} s`, seconds);
  };
  /** Counts a failed authentication of `client`, in its open window or a new one. */
  const failed = (client: string): void => {
    const now = clock();
    expire(now);
    const entry = clients.get(client);
    if (entry) {
      entry.failures++;
      return;
    }
    if (clients.size >= maxClients) clients.delete(clients.keys().next().value!);
    clients.set(client, { failures: 1, until: now + windowMs });
  };
  return {
    /** The brake of one request's client; its address (`unknown` when there is none) is looked up once, when needed. */
    brake(address: () => string | undefined): Brake {
      let client: string | undefined;
      const lookedUp = () => (client ??= address() ?? "unknown");
      return { check: () => check(lookedUp), failed: () => failed(lookedUp()) };
    },
    /** How many clients are remembered now (for tests). */
    remembered: () => clients.size,
  };
}
export type FailureLimit = ReturnType<typeof createFailureLimit>;
