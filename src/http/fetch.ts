/**
 * How the service talks to upstreams, at the bottom of every layer: the fetch it is given (injectable, like the
 * MCP SDK's `FetchLike`), the errors the URL guard adds to it, and the one place a failed fetch becomes a kind
 * and a sentence (for `disconnect_reason`, problem details and card refresh errors alike).
 */

/** A plain fetch, as the MCP SDK's FetchLike: injectable for tests. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** The URL guard refused the URL: a metadata, link-local or (when blocked) private address, or a non-https server URL. */
export class UnsafeUrl extends Error {}
/** The URL's host does not resolve (now: the next attempt resolves again). */
export class UnresolvableHost extends Error {}

/**
 * How long one control-plane call to an upstream may take: the MCP handshake at connect, each OAuth metadata,
 * registration, token and revocation request. The proxy's own wait is PROXY__UPSTREAM_TIMEOUT_SECONDS.
 */
export const UPSTREAM_CALL_TIMEOUT_MS = 15_000;

export type FetchFailure = {
  /** unsafe: refused by the URL guard; unresolvable: DNS; timeout: no answer in time; unreachable: the network said no. */
  kind: "unsafe" | "unresolvable" | "timeout" | "unreachable";
  /** A sentence fragment without a subject: "connection refused", "no answer within 15 s". */
  detail: string;
};

/** What a fetch that threw means, in words a user can act on. `timeoutMs` names the wait when it ran out. */
export function classifyFetchFailure(e: unknown, timeoutMs?: number): FetchFailure {
  if (e instanceof UnsafeUrl) return { kind: "unsafe", detail: e.message };
  if (e instanceof UnresolvableHost) return { kind: "unresolvable", detail: e.message };
  if (e instanceof DOMException && (e.name === "TimeoutError" || e.name === "AbortError")) {
    return { kind: "timeout", detail: timeoutMs === undefined ? "no answer in time" : `no answer within ${timeoutMs / 1000} s` };
  }
  return { kind: "unreachable", detail: networkError(e) };
}

function networkError(e: unknown): string {
  const err = e as { code?: string; message?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "connection refused";
  if (code === "ECONNRESET" || code === "ConnectionClosed") return "connection closed by the server";
  if (code === "FailedToOpenSocket" || code === "ENOTFOUND") return "the host could not be resolved or reached";
  if (code?.startsWith("ERR_TLS") || code?.includes("CERT") || code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE") {
    return `TLS failed (${code})`;
  }
  return code ?? err.message ?? "network error";
}
