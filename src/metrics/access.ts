import { createHash, timingSafeEqual } from "node:crypto";

/** Why a scrape was refused: it sent no bearer token, or not METRICS__TOKEN. */
export type ScrapeRefusal = "missing" | "wrong";

/** The realm of the metrics token's challenge ([RFC 6750 §3](https://www.rfc-editor.org/rfc/rfc6750#section-3)): not the API's credentials. */
export const METRICS_CHALLENGE = 'Bearer realm="metrics"';

const digest = (value: string) => createHash("sha256").update(value).digest();

/**
 * Whether a scrape may read /metrics: always when no METRICS__TOKEN is set, else only with
 * `Authorization: Bearer <token>`. Compared as SHA-256 digests in constant time, so neither the token's
 * characters nor its length show in how long a refusal takes.
 */
export function scrapeAccess(token: string | undefined): (authorization: string | null) => ScrapeRefusal | undefined {
  if (token === undefined) return () => undefined;
  const wanted = digest(token);
  return (authorization) => {
    // [RFC 6750 §2.1](https://www.rfc-editor.org/rfc/rfc6750#section-2.1); the scheme is case-insensitive (RFC 9110 §11.1).
    const given = /^bearer +(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (given === undefined) return "missing";
    return timingSafeEqual(digest(given), wanted) ? undefined : "wrong";
  };
}
