import { HOP_BY_HOP_HEADERS } from "../http/hop-by-hop";

/**
 * Request headers a relay passes on: only those named (the protocol's own), then `extra` (a connector's stored
 * credentials). Never the client's Authorization or cookies, which are for this service.
 */
export function relayedRequestHeaders(client: Headers, names: readonly string[], extra: Record<string, string> = {}): Headers {
  const out = new Headers();
  for (const name of names) {
    const value = client.get(name);
    if (value !== null) out.set(name, value);
  }
  for (const name in extra) out.set(name, extra[name]!);
  return out;
}

/**
 * Response headers that are not passed back: hop-by-hop and framing, which the service's own connection
 * sets; cookies, since the service's origin is not the upstream's; CORS headers, since the service's own origin
 * policy decides (http/cors.ts).
 */
const DROPPED_RESPONSE_HEADERS = new Set([...HOP_BY_HOP_HEADERS, "content-length", "set-cookie", "date", "server", "alt-svc"]);

export function clientResponseHeaders(upstream: Headers): Headers {
  const out = new Headers();
  // [RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1): headers named in Connection are hop-by-hop too.
  const connection = upstream.get("connection");
  const named = connection === null ? undefined : new Set(connection.toLowerCase().split(",").map((s) => s.trim()));
  upstream.forEach((value, name) => {
    if (!DROPPED_RESPONSE_HEADERS.has(name) && !named?.has(name) && !name.startsWith("access-control-")) out.append(name, value);
  });
  return out;
}
