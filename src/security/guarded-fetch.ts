import type { FetchLike } from "../app";
import type { UrlGuard } from "./url-guard";

/** A fetch that refuses URLs the guard refuses, checked at every call (so after every resolution). */
export function guardedFetch(fetch: FetchLike, guard: UrlGuard): FetchLike {
  return async (input, init) => {
    const url = input instanceof Request ? new URL(input.url) : new URL(input);
    await guard.check(url);
    return fetch(input, init);
  };
}
