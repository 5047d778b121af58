import { createHash } from "node:crypto";
import type { ConnectorRow } from "../connectors/repository";
import type { FetchLike } from "../http/fetch";
import type { HandshakeOptions, HandshakeResult } from "../upstream/handshake";

/**
 * Whether an upstream's 401 means the connector's credentials stopped working (docs/behaviour.md "MCP proxy"). A 401 to one
 * request proves little: a server may answer 401 to a request it could not have accepted anyway — a GET stream
 * opened before `initialize` (no session yet), a session it does not know — whatever the credentials. So the
 * proxy asks the server again, with a fresh MCP handshake carrying exactly the stored credentials; only a refusal of
 * that disconnects the connector. One check runs per connector at a time (a burst of 401s waits for the same one),
 * and an accepted check stands for PROOF_MS, so a client that keeps opening such streams does not make the service
 * handshake again each time.
 */

/** How long credentials a handshake accepted are taken as good. */
const PROOF_MS = 30_000;

export type CredentialVerdict = { refused: false } | { refused: true; status: number; said: string };

export type CredentialCheckDeps = {
  handshake: (url: URL, options: HandshakeOptions) => Promise<HandshakeResult>;
  clock: () => number;
};

/** At most this much of what the server said goes into a reason. */
const SAID_CHARS = 200;

/**
 * What the server said with its refusal, fit to show the connector's owner: its challenge and the start of its body,
 * on one line, without control characters, and without the credentials themselves should the server echo them.
 */
export function quoteRefusal(
  result: { wwwAuthenticate: string | null; body?: string },
  credentials: Record<string, string>,
): string {
  let said = [result.wwwAuthenticate && `WWW-Authenticate: ${result.wwwAuthenticate}`, result.body?.trim()]
    .filter(Boolean)
    .join("; ");
  const secrets = Object.values(credentials)
    .flatMap((value) => [value, ...value.split(/\s+/)])
    .filter((part) => part.length >= 8);
  for (const secret of secrets.sort((a, b) => b.length - a.length)) said = said.split(secret).join("[redacted]");
  said = said
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return said.length > SAID_CHARS ? `${said.slice(0, SAID_CHARS)}…` : said;
}

export function createCredentialCheck({ handshake, clock }: CredentialCheckDeps) {
  const running = new Map<string, Promise<CredentialVerdict>>();
  const proven = new Map<string, number>();

  async function check(url: URL, fetch: FetchLike, credentials: Record<string, string>): Promise<CredentialVerdict> {
    const result = await handshake(url, { fetch, headers: credentials });
    if (result.ok || result.kind !== "unauthorized") return { refused: false };
    return { refused: true, status: result.status, said: quoteRefusal(result, credentials) };
  }

  // A proof holds for these credentials only (an OAuth refresh, a connect with new headers: checked anew).
  const keyOf = (row: ConnectorRow, credentials: Record<string, string>) =>
    `${row.id}:${createHash("sha256").update(JSON.stringify(credentials)).digest("base64url")}`;
  const isProven = (key: string) => {
    const at = proven.get(key);
    if (at !== undefined && clock() - at < PROOF_MS) return true;
    proven.delete(key);
    return false;
  };

  return {
    /** Whether a handshake accepted `credentials` moments ago: a 401 now is about the request, not them. */
    proven: (row: ConnectorRow, credentials: Record<string, string>) => isProven(keyOf(row, credentials)),

    /**
     * Checks `credentials` with a fresh handshake at `url` (single flight per connector). An outage or a broken server
     * is no refusal: the connector stays as it is.
     */
    async verify(row: ConnectorRow, url: URL, fetch: FetchLike, credentials: Record<string, string>): Promise<CredentialVerdict> {
      const key = keyOf(row, credentials);
      if (isProven(key)) return { refused: false };
      let verdict = running.get(key);
      if (!verdict) {
        verdict = check(url, fetch, credentials).finally(() => running.delete(key));
        running.set(key, verdict);
      }
      const outcome = await verdict;
      if (!outcome.refused) {
        // Proofs of credentials no longer used (rotated tokens) are not kept past their time.
        for (const [stale, at] of proven) if (clock() - at >= PROOF_MS) proven.delete(stale);
        proven.set(key, clock());
      }
      return outcome;
    },
  };
}
export type CredentialCheck = ReturnType<typeof createCredentialCheck>;
