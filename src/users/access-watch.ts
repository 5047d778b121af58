import type { Logger } from "../observability/logger";
import type { Principal } from "./model";

/** How stale a long-lived stream's access may be: within this, a stream whose principal lost access ends. */
export const ACCESS_RECHECK_MS = 1_000;

/** What a stream was opened with: its Authorization header, or the console's cookie. */
export type StreamCredential = { authorization: string | null; cookie: string | null };

export type AccessWatchDeps = {
  /** Authenticates the credential again as a request would (a password without the failure brake): throws when it is no longer good. */
  recheck(credential: StreamCredential): Promise<Principal | undefined>;
  intervalMs?: number;
  /** Where a recheck that failed for another reason than a refusal (the store, for a moment) is told. */
  log?: Logger;
};

type Watched = { credential: StreamCredential; principal: Principal; closers: Set<() => void> };

/**
 * Long-lived streams (the connector events, relayed MCP event streams) keep the identity they were opened with only
 * while it still holds. Every `intervalMs` each distinct credential behind an open stream is authenticated again —
 * once, however many streams it holds open — and every stream of one that fails, or that now names another user or
 * another role (a demoted administrator saw everyone's events), is ended. A client that reconnects is authenticated
 * afresh and sees what it may see now.
 */
export function createAccessWatch({ recheck, intervalMs = ACCESS_RECHECK_MS, log }: AccessWatchDeps) {
  const watched = new Map<string, Watched>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let sweeping: Promise<number> | undefined;

  const keyOf = (c: StreamCredential, p: Principal) =>
    JSON.stringify([c.authorization, c.cookie, p.id, p.role, p.connector ?? null, p.boundVirtualServer ?? null]);

  async function check(entry: Watched): Promise<boolean> {
    try {
      const now = await recheck(entry.credential);
      return (
        now !== undefined &&
        now.id === entry.principal.id &&
        now.role === entry.principal.role &&
        now.connector === entry.principal.connector &&
        now.boundVirtualServer === entry.principal.boundVirtualServer
      );
    } catch (e) {
      // A refusal (401) is the answer; anything else (the store failing for a moment) is not a reason to cut a stream.
      if ((e as { status?: number }).status === 401 || (e as { status?: number }).status === 403) return false;
      log?.warn("could not check a stream's access again", { error: (e as Error).message });
      return true;
    }
  }

  /** Checks every watched credential once; ends the streams of those that lost access. */
  async function sweep(): Promise<number> {
    let ended = 0;
    await Promise.all(
      [...watched].map(async ([key, entry]) => {
        if (await check(entry)) return;
        watched.delete(key);
        for (const close of entry.closers) {
          ended++;
          close();
        }
      }),
    );
    if (watched.size === 0) stop();
    return ended;
  }

  function stop() {
    clearInterval(timer);
    timer = undefined;
  }

  /** Watches a stream; `close` ends it. Returns what forgets it (call when the stream ends by itself). */
  function watch(credential: StreamCredential, principal: Principal, close: () => void): () => void {
    const key = keyOf(credential, principal);
    let entry = watched.get(key);
    if (!entry) watched.set(key, (entry = { credential, principal, closers: new Set() }));
    entry.closers.add(close);
    // One sweep at a time: a slow store never stacks them up.
    if (!timer) {
      timer = setInterval(() => void (sweeping ??= sweep().finally(() => (sweeping = undefined))), intervalMs);
      timer.unref?.();
    }
    const mine = entry;
    return () => {
      mine.closers.delete(close);
      if (mine.closers.size === 0 && watched.get(key) === mine) watched.delete(key);
      if (watched.size === 0) stop();
    };
  }

  return {
    watch,
    /**
     * The watch of one request's stream, as relays take it (`close` ends the stream; what it returns forgets it): the
     * credential the request carries, checked again as `principal`.
     */
    of(request: Request, principal: Principal): (close: () => void) => () => void {
      return (close) => watch(streamCredential(request), principal, close);
    },
    /** One round now (tests; the timer does it every `intervalMs`). Answers how many streams it ended. */
    sweep,
    /** How many distinct credentials are watched (tests). */
    size: () => watched.size,
  };
}
export type AccessWatch = ReturnType<typeof createAccessWatch>;

/** The credential of a request, as the watch keeps it. */
export const streamCredential = (request: Request): StreamCredential => ({
  authorization: request.headers.get("authorization"),
  cookie: request.headers.get("cookie"),
});
