import { TooManyRequests } from "../http-errors/errors";

export type FailureLimitOptions = {
  clock: () => number;
  /** Failed authentications a client may make per window (AUTH__MAX_FAILURES). */
  maxFailures: number;
  windowMs: number;
  /** How many clients are remembered at most; the oldest windows go first. */
  maxClients?: number;
};

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
  const checkClient = (client: string): void => {
    const entry = clients.get(client);
    const now = clock();
    if (!entry || entry.until <= now || entry.failures < maxFailures) return;
    const seconds = Math.max(1, Math.ceil((entry.until - now) / 1000));
    throw new TooManyRequests(`Too many failed authentications from this client: try again in ${seconds} s`, seconds);
  };
  return {
    checkClient,
    /** The same, for a client whose address is looked up only when some client failed lately (the proxy's hot path). */
    check(client: () => string): void {
      if (clients.size === 0) return;
      expire(clock());
      if (clients.size > 0) checkClient(client());
    },
    failed(client: string): void {
      const now = clock();
      expire(now);
      const entry = clients.get(client);
      if (entry) {
        entry.failures++;
        return;
      }
      if (clients.size >= maxClients) clients.delete(clients.keys().next().value!);
      clients.set(client, { failures: 1, until: now + windowMs });
    },
    /** How many clients are remembered now (for tests). */
    remembered: () => clients.size,
  };
}
export type FailureLimit = ReturnType<typeof createFailureLimit>;
