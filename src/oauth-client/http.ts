import * as oauth from "oauth4webapi";
import { UnsafeUrl, UPSTREAM_CALL_TIMEOUT_MS, type FetchLike } from "../http/fetch";

/** [RFC 8252 §8.3](https://www.rfc-editor.org/rfc/rfc8252#section-8.3) / loopback: the only hosts plain http may be used with, and only on a self-hosted VM. */
const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Every URL an authorization flow follows is server-chosen (resource metadata, authorization servers,
 * registration and token endpoints): it must be https, except loopback when private networks are allowed.
 * The URL guard then checks its addresses, as for user URLs.
 */
export function assertSecureUrl(url: URL, blockPrivate: boolean): void {
  if (url.protocol === "https:") return;
  if (url.protocol === "http:" && !blockPrivate && LOOPBACK.test(url.host.replace(/:\d+$/, ""))) return;
  throw new UnsafeUrl(`${url.origin} is not https (plain http is allowed only for loopback hosts)`);
}

export type OAuthHttp = {
  /** Options for every oauth4webapi request: the guarded fetch, and http allowed where assertSecureUrl allows it. */
  options(url: URL | string): { [oauth.customFetch]: FetchLike; [oauth.allowInsecureRequests]: boolean };
  /** The guarded fetch for server-chosen URLs: https (see assertSecureUrl), no redirects, UPSTREAM_CALL_TIMEOUT_MS. */
  fetch: FetchLike;
  blockPrivate: boolean;
};

export function createOAuthHttp(guardedFetch: FetchLike, blockPrivate: boolean): OAuthHttp {
  const fetch: FetchLike = async (input, init) => {
    assertSecureUrl(new URL(input instanceof Request ? input.url : input), blockPrivate);
    return guardedFetch(input, {
      ...init,
      redirect: "manual",
      signal: init?.signal ?? AbortSignal.timeout(UPSTREAM_CALL_TIMEOUT_MS),
    });
  };
  return {
    fetch,
    blockPrivate,
    options(url) {
      const target = new URL(url);
      assertSecureUrl(target, blockPrivate);
      return {
        [oauth.customFetch]: fetch,
        [oauth.allowInsecureRequests]: target.protocol === "http:",
      };
    },
  };
}
