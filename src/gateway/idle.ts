/**
 * How long a gateway session may go without a request before it is closed: MCP clients often go away without the
 * DELETE that would end it. A client that comes back gets 404 and starts a new session.
 */
export const IDLE_SESSION_MS = 15 * 60_000;

/** What the sweep reads of a session: when a request last came, and how many are being answered now. */
export type Activity = { lastActive: number; answering: number };

/** Marks `session` busy while `answer` runs, and active when it is done: a slow answer is never taken for idleness. */
export async function whileAnswering<R>(session: Activity, answer: () => Promise<R>): Promise<R> {
  session.answering++;
  session.lastActive = Date.now();
  try {
    return await answer();
  } finally {
    session.answering--;
    session.lastActive = Date.now();
  }
}

/**
 * Closes, about once a minute, every session idle for `idleMs` — none that is answering a request (a tool call may
 * outlast the idle time) — and returns the function that stops the sweep.
 */
export function sweepIdleSessions<S extends Activity>(
  sessions: () => Iterable<S>,
  idleMs: number,
  close: (session: S) => void,
): () => void {
  const timer = setInterval(
    () => {
      const cutoff = Date.now() - idleMs;
      for (const session of sessions()) if (session.answering === 0 && session.lastActive < cutoff) close(session);
    },
    Math.min(60_000, idleMs),
  );
  timer.unref();
  return () => clearInterval(timer);
}
