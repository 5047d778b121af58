import * as oauth from "oauth4webapi";
import { UnsafeUrl, UnresolvableHost } from "../security/url-guard";
import { describeFetchError } from "../proxy/forward";
import { DiscoveryFailed } from "./discovery";
import { NoClientIdentity } from "./client-identity";

/** RFC 6749 §5.2 errors after which retrying the same grant cannot succeed. */
const PERMANENT = new Set(["invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope"]);

/** `client`: no client identity can be had; the user must supply a client_id. */
export type OAuthFailure = { reason: string; permanent: boolean; kind: "config" | "client" | "upstream" | "rejected" };

/**
 * The single point where errors of an OAuth step (oauth4webapi's, the URL guard's, the network's) become
 * a sentence for `disconnect_reason` and a decision: retry later, or give up.
 */
export function describeOAuthError(e: unknown): OAuthFailure {
  if (e instanceof oauth.ResponseBodyError) {
    const detail = e.error_description ? `${e.error}: ${e.error_description}` : e.error;
    return { reason: `the authorization server answered ${detail}`, permanent: PERMANENT.has(e.error), kind: "rejected" };
  }
  if (e instanceof oauth.AuthorizationResponseError) {
    const detail = e.error_description ? `${e.error}: ${e.error_description}` : e.error;
    return { reason: `the authorization was not granted (${detail})`, permanent: true, kind: "rejected" };
  }
  if (e instanceof oauth.WWWAuthenticateChallengeError) {
    return { reason: `the authorization server refused the request (HTTP ${e.status})`, permanent: true, kind: "rejected" };
  }
  if (e instanceof NoClientIdentity) return { reason: e.message, permanent: true, kind: "client" };
  if (e instanceof DiscoveryFailed) return { reason: e.message, permanent: true, kind: "config" };
  if (e instanceof UnsafeUrl) return { reason: `refused to follow ${e.message}`, permanent: true, kind: "config" };
  if (e instanceof UnresolvableHost) return { reason: e.message, permanent: false, kind: "upstream" };
  if (e instanceof oauth.OperationProcessingError) {
    const status = (e.cause as { status?: number } | undefined)?.status;
    return { reason: `the authorization server's answer was not valid OAuth (${e.message})`, permanent: status !== undefined && status < 500, kind: "upstream" };
  }
  if (e instanceof DOMException && (e.name === "TimeoutError" || e.name === "AbortError")) {
    return { reason: "the authorization server did not answer in time", permanent: false, kind: "upstream" };
  }
  return { reason: `the authorization server could not be reached (${describeFetchError(e)})`, permanent: false, kind: "upstream" };
}
