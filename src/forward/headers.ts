/**
 * Request headers a relay passes on: only those named (the protocol's own), then `extra` (a connector's stored
 * credentials). Never the client's Authorization or cookies, which are for this service.
 */
export function upstreamRequestHeaders(client: Headers, names: readonly string[], extra: Record<string, string> = {}): Headers {
  const out = new Headers();
  for (const name of names) {
    const value = client.get(name);
    if (value !== null) out.set(name, value);
  }
  for (const name in extra) out.set(name, extra[name]!);
  return out;
}

/**
 * The upstream's response headers a relay passes back: only these. A relayed answer is served on the service's own
 * origin, where a header an upstream chose could act for it — `Refresh` or `Location` send the browser elsewhere,
 * `Link` loads what it names, `Set-Cookie` and `Clear-Site-Data` reach the console's session, `NEL`/`Report-To` keep
 * reporting the origin's traffic to the upstream, `Alt-Svc` and `Strict-Transport-Security` change how the origin is
 * reached, `Access-Control-*` would override the service's CORS policy (http/cors.ts) — so nothing but the protocols'
 * own headers goes back. Framing and hop-by-hop headers are the service's own connection's. `WWW-Authenticate` is
 * the upstream's challenge of the connector's credentials, which the service holds: the proxy challenges for its own.
 */
const RELAYED_RESPONSE_HEADERS = new Set([
  "content-type",
  // Compressed bodies pass untouched (fetch runs with decompress: false, the client's Accept-Encoding forwarded).
  "content-encoding",
  "cache-control",
  "retry-after",
  // MCP Streamable HTTP.
  "mcp-session-id",
  "mcp-protocol-version",
  // A2A 0.3.0 §3.2.6: the extensions the agent activated.
  "x-a2a-extensions",
]);

/**
 * What every relayed answer carries so that, opened as a page on the service's origin, it cannot render, run or
 * frame anything: a sandboxed document with no sources at all ([CSP 3 §6.3.2](https://www.w3.org/TR/CSP3/#directive-sandbox)),
 * and no type sniffing ([Fetch §X-Content-Type-Options](https://fetch.spec.whatwg.org/#x-content-type-options-header)).
 */
export const RELAYED_ANSWER_HEADERS = {
  "content-security-policy": "sandbox; default-src 'none'",
  "x-content-type-options": "nosniff",
} as const;
/** The same, as Headers: copied from Headers, a relayed answer's start costs less than from an object. */
const ANSWER_HEADERS = new Headers(RELAYED_ANSWER_HEADERS);

/** The headers of a relayed answer: the upstream's allowed ones, and RELAYED_ANSWER_HEADERS; `Content-Type` only with a body. */
export function clientResponseHeaders(upstream: Headers, hasBody = true): Headers {
  const out = new Headers(ANSWER_HEADERS);
  upstream.forEach((value, name) => {
    if (RELAYED_RESPONSE_HEADERS.has(name) && (hasBody || name !== "content-type")) out.append(name, value);
  });
  return out;
}
