/**
 * When to refresh a token: at 80 % of its lifetime or 60 s before it expires, whichever comes
 * first — but not before half its lifetime, or a token living under 75 s would be refreshed as soon as it
 * arrives, forever. Pure, so the rule has one home and its tests need no clock.
 */
export function refreshAt(issuedAt: number, expiresAt: number | null): number | null {
  if (expiresAt === null) return null;
  const lifetime = expiresAt - issuedAt;
  return Math.max(issuedAt + lifetime / 2, Math.min(issuedAt + lifetime * 0.8, expiresAt - 60_000));
}

/** Backoff after a transient refresh failure: 5 s, 10 s, 20 s … capped at 5 min, never past the expiry. */
export function retryAt(now: number, failures: number, expiresAt: number | null): number {
  const delay = Math.min(5_000 * 2 ** Math.max(0, failures - 1), 300_000);
  return expiresAt === null ? now + delay : Math.min(now + delay, Math.max(now, expiresAt - 5_000));
}
