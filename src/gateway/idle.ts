/**
 * How long a gateway session may go without a request before it is closed: MCP clients often go away without the
 * DELETE that would end it. A client that comes back gets 404 and starts a new session.
 */
export const IDLE_SESSION_MS = 15 * 60_000;

/** Closes, about once a minute, every session idle for `idleMs`; the function returned stops the sweep. */
export function sweepIdleSessions<S extends { lastActive: number }>(
  sessions: () => Iterable<S>,
  idleMs: number,
  close: (session: S) => void,
): () => void {
  const timer = setInterval(
    () => {
      const cutoff = Date.now() - idleMs;
      for (const session of sessions()) if (session.lastActive < cutoff) close(session);
    },
    Math.min(60_000, idleMs),
  );
  timer.unref();
  return () => clearInterval(timer);
}
