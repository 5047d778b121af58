import { isIP } from "node:net";
import type { FetchLike } from "../http/fetch";
import { bareHost, type UrlGuard } from "./url-guard";

/**
 * A fetch that connects only to addresses the guard checked for this connection: the host is resolved and checked
 * once (url-guard.ts), and the request goes to one of those addresses, the name kept as `Host` (RFC 9110 §7.2) and,
 * over TLS, as the SNI name the certificate is verified against (RFC 6066 §3). Bun's own resolver is never asked, so a
 * name that answers a public address to the check and a refused one to the connection (DNS rebinding) gets nowhere.
 * Bun keeps pooled connections apart by server name, so two names on one address never share one.
 *
 * Redirects are never followed: the next hop's address would not be checked. Callers read the 3xx themselves.
 */
export function guardedFetch(fetch: FetchLike, guard: UrlGuard): FetchLike {
  return async (input, init) => {
    if (input instanceof Request) {
      init = {
        method: input.method,
        headers: input.headers,
        body: input.body,
        signal: input.signal,
        ...(input.body && { duplex: "half" }),
        ...init,
      } as RequestInit;
    }
    const url = input instanceof URL ? input : new URL(input instanceof Request ? input.url : input);
    // The proxy's hot path: a host checked a moment ago needs no await.
    const addresses = guard.addressesNow(url) ?? (await guard.addresses(url));
    if (isIP(bareHost(url))) return fetch(url, { ...init, redirect: "manual" });
    const replayable = !(init?.body instanceof ReadableStream);
    for (let i = 0; ; i++) {
      try {
        return await fetch(pinnedUrl(url, addresses[i]!), pinnedInit(url, init));
      } catch (e) {
        // The next address only when this one took no request (nothing was sent) and the body can be sent again.
        if (i + 1 >= addresses.length || !replayable || init?.signal?.aborted || !notConnected(e)) throw e;
      }
    }
  };
}

/** The URL with its host replaced by the address to connect to (an IPv6 address in brackets, RFC 3986 §3.2.2). */
function pinnedUrl(url: URL, address: string): string {
  const host = isIP(address) === 6 ? `[${address}]` : address;
  return `${url.protocol}//${host}${url.port ? `:${url.port}` : ""}${url.pathname}${url.search}`;
}

function pinnedInit(url: URL, init: RequestInit | undefined): RequestInit {
  const headers = new Headers(init?.headers);
  headers.set("host", url.host);
  const pinned: RequestInit & { tls?: Record<string, unknown> } = { ...init, headers, redirect: "manual" };
  if (url.protocol === "https:") {
    // SNI carries no trailing dot (RFC 6066 §3: a fully qualified name without it).
    pinned.tls = { ...(init as { tls?: Record<string, unknown> } | undefined)?.tls, serverName: url.hostname.replace(/\.$/, "") };
  }
  return pinned;
}

/** A failure to open the connection, before any byte of the request left. */
function notConnected(e: unknown): boolean {
  const err = e as { code?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code;
  return (
    code === "ConnectionRefused" ||
    code === "ECONNREFUSED" ||
    code === "FailedToOpenSocket" ||
    code === "ENETUNREACH" ||
    code === "EHOSTUNREACH"
  );
}
