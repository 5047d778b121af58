import type { FetchLike } from "../http/fetch";
import type { UrlGuard } from "./url-guard";

/** A fetch that refuses URLs the guard refuses, checked at every call (so after every resolution). */
export function guardedFetch(fetch: FetchLike, guard: UrlGuard): FetchLike {
  return async (input, init) => {
    const url = input instanceof URL ? input : new URL(input instanceof Request ? input.url : input);
    // The proxy's hot path: a host checked a moment ago needs no second await.
    if (!guard.recentlyAllowed(url)) await guard.check(url);
    return fetch(input, init);
  };
}
