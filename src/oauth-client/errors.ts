import * as oauth from "oauth4webapi";
import {
  AppError,
  OAuthClientRequired,
  OAuthDiscoveryFailed,
  OAuthRequestRejected,
  OAuthServerUnreachable,
} from "../http-errors/errors";
import { classifyFetchFailure, UPSTREAM_CALL_TIMEOUT_MS } from "../http/fetch";
import { NoClientIdentity } from "./client-identity";
import { DiscoveryFailed } from "./discovery";

/** [RFC 6749 §5.2](https://www.rfc-editor.org/rfc/rfc6749#section-5.2): errors after which retrying the same grant cannot succeed. */
const PERMANENT = new Set(["invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope"]);

/**
 * What went wrong in an OAuth step. `discovery`: the server's metadata is missing, unsafe or unusable; `client`:
 * no client identity can be had (the user must supply a client_id); `unreachable`: the network or a timeout;
 * `rejected`: the authorization server answered with an OAuth error.
 */
export type OAuthFailure = { reason: string; permanent: boolean; kind: "discovery" | "client" | "unreachable" | "rejected" };

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
  if (e instanceof DiscoveryFailed) return { reason: e.message, permanent: true, kind: "discovery" };
  if (e instanceof oauth.OperationProcessingError) {
    const status = (e.cause as { status?: number } | undefined)?.status;
    return {
      reason: `the authorization server's answer was not valid OAuth (${e.message})`,
      permanent: status !== undefined && status < 500,
      kind: "unreachable",
    };
  }
  const failure = classifyFetchFailure(e, UPSTREAM_CALL_TIMEOUT_MS);
  switch (failure.kind) {
    case "unsafe":
      return { reason: `refused to follow ${failure.detail}`, permanent: true, kind: "discovery" };
    case "unresolvable":
      return { reason: failure.detail, permanent: false, kind: "unreachable" };
    case "timeout":
      return {
        reason: `the authorization server did not answer in time (${failure.detail})`,
        permanent: false,
        kind: "unreachable",
      };
    case "unreachable":
      return {
        reason: `the authorization server could not be reached (${failure.detail})`,
        permanent: false,
        kind: "unreachable",
      };
  }
}

/** The problem a client gets when an authorization cannot start; each kind has its own stable type. */
export function oauthProblem(failure: OAuthFailure, detail: string): AppError {
  switch (failure.kind) {
    case "client":
      return new OAuthClientRequired(detail, [{ field: "client_id", detail: failure.reason }]);
    case "discovery":
      return new OAuthDiscoveryFailed(detail);
    case "unreachable":
      return new OAuthServerUnreachable(detail);
    case "rejected":
      return new OAuthRequestRejected(detail);
  }
}
