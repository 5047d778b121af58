import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import type { ConnectorRow } from "../connectors/repository";
import type { Transitions } from "../connectors/transitions";
import { forward, type ForwardOptions, type Forwarded } from "../forward/forward";
import { upstreamRequestHeaders } from "../forward/headers";
import {
  OAuthAuthorizationRequired,
  OAuthScopeRequired,
  UpstreamCredentialsRevoked,
  UpstreamFailed,
} from "../http-errors/errors";
import type { Authorization } from "../oauth-client/authorization";
import type { CredentialCheck } from "./credential-check";
import { MCP_REQUEST_HEADERS } from "./headers";
import { CALLER_HEADER } from "../gateway/caller";
import type { Observation } from "./observe";
import type { Target, Targets } from "./target";

/**
 * The fourth step of the hot path: the request sent to the connector's server (forward/, the HTTP hop) with the
 * connector's credentials, and the recovery the connector allows when the server refuses them — a 401 refreshed
 * and replayed, or checked with a fresh handshake; a 403 asking for more scope.
 */

export type SenderDeps = {
  targets: Targets;
  transitions: Transitions;
  authorization: Authorization;
  /** Whether an upstream's 401 is a refusal of the connector's credentials (a fresh handshake). */
  credentialCheck: CredentialCheck;
  forward: ForwardOptions;
  clock: () => number;
};

/** What goes to the server: the body, and what reading it changed in the headers. */
export type Sending = {
  /** The checked message serialised again (sent as `application/json`), bytes held whole, a stream, or none. */
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  /** The body is the message the proxy read (message.ts). */
  message: boolean;
  /** MCP 2026-07-28 `Mcp-Name` as the tool policy renamed it. */
  mcpName?: string;
  /** Asks for an uncompressed answer (a listing the policy rewrites must be read). */
  uncompressed: boolean;
  /** To a managed server's gateway: who asks (gateway/caller.ts). */
  caller?: string;
};

export function createSender({ targets, transitions, authorization, credentialCheck, forward: base, clock }: SenderDeps) {
  /** The stored credentials stopped working: the caller gets a 502 (a 401 would blame its own credentials). */
  async function credentialsRejected(row: ConnectorRow, why: string): Promise<never> {
    const reason = `The MCP server rejected the ${why} at ${new Date(clock()).toISOString()}`;
    await transitions.disconnectIfConnected(row.id, reason);
    throw new UpstreamCredentialsRevoked(`${reason}; the connector is now disconnected: connect it again`);
  }

  /**
   * An upstream 401. An OAuth connector refreshes its token once (single flight per connector) and replays the
   * request with it — a body held whole can be sent again ([MCP authorization (2025-11-25) §"Token Handling"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#token-handling)).
   * A 401 that remains is the server's answer to this request, not a verdict on the credentials: only a fresh
   * handshake with them (credential-check.ts) says that. Refused: the connector is disconnected with what the server
   * said; accepted: the client gets the 401 as the server sent it. An open connector has no credentials to check: its
   * server asks for some, and the OAuth flow starts.
   */
  async function unauthorized(
    row: ConnectorRow,
    target: Target,
    request: Request,
    headers: Headers,
    options: ForwardOptions,
    first: Forwarded,
    spare: Uint8Array | null,
  ): Promise<Forwarded> {
    if (row.auth_method === "none" && !target.managed) {
      // An open server that now wants authorization (e.g. only for tools, initialize staying open — so no handshake
      // could tell): the OAuth flow, as at connect.
      await first.upstream.body?.cancel();
      const link = await authorization.afterChallenge(row, first.upstream);
      throw new OAuthAuthorizationRequired(
        link
          ? `The MCP server now requires authorization: authorization pending: open ${link}, then retry`
          : "The MCP server now requires authorization, which could not start: the connector's disconnect_reason says why; connect it again",
      );
    }
    let forwarded = first;
    let credentials = await targets.credentials(row);
    // Accepted by a handshake moments ago: nothing to refresh or check again (a client's stray 401s cost nothing).
    if (credentialCheck.proven(row, credentials)) return forwarded;
    if (row.auth_method === "oauth") {
      await first.upstream.body?.cancel();
      const rejected = headers.get("authorization")?.replace(/^Bearer /, "");
      const refreshed = await authorization.refresh(row.id, rejected);
      if (!refreshed.ok) {
        // A refresh that cannot succeed disconnected the connector already (oauth-client/authorization.ts); another may next time.
        if (refreshed.failure.permanent || refreshed.expired)
          return credentialsRejected(row, `access token (HTTP 401) and its refresh failed (${refreshed.failure.reason})`);
        throw new UpstreamFailed(
          `The MCP server refused the connector's access token and refreshing it failed for now (${refreshed.failure.reason}): try again`,
        );
      }
      headers.set("authorization", `Bearer ${refreshed.accessToken}`);
      credentials = { authorization: `Bearer ${refreshed.accessToken}` };
      if (spare === null && request.method === "POST" && request.body !== null) {
        throw new UpstreamFailed(
          "The MCP server refused the connector's access token, which has now been refreshed: send the request again (a body this large is not kept to be replayed)",
        );
      }
      forwarded = await forward(request, target.url, headers, options, spare);
      if (forwarded.upstream.status !== 401) return forwarded;
    }
    const verdict = await credentialCheck.verify(row, target.url, options.fetch, credentials);
    if (!verdict.refused) return forwarded;
    await forwarded.upstream.body?.cancel();
    const what = row.auth_method === "oauth" ? "freshly refreshed access token" : "stored credentials";
    return credentialsRejected(
      row,
      `${what} when they were checked again after a 401 (HTTP ${verdict.status}${verdict.said ? `: ${verdict.said}` : ""})`,
    );
  }

  /** A 403 insufficient_scope to an OAuth connector: the connector asks its user for the scope, the client is told. */
  async function insufficientScope(row: ConnectorRow, forwarded: Forwarded): Promise<void> {
    const challenge = extractWWWAuthenticateParams(forwarded.upstream);
    if (challenge.error !== "insufficient_scope" || !challenge.scope) return;
    await forwarded.upstream.body?.cancel();
    await authorization.upgradeScope(row, forwarded.upstream, challenge.scope);
    throw new OAuthScopeRequired(
      `The MCP server needs the scope "${challenge.scope}", which the connector was not granted: open the connector's auth_request.authorization_url to grant it`,
    );
  }

  /** Sends one MCP request on, recovering from a 401 (refresh) or a 403 insufficient_scope as the connector allows. */
  return async function send(
    row: ConnectorRow,
    target: Target,
    request: Request,
    sending: Sending,
    observation: Observation,
  ): Promise<Forwarded> {
    const options = target.fetch ? { ...base, fetch: target.fetch } : base;
    const headers = upstreamRequestHeaders(request.headers, MCP_REQUEST_HEADERS, await targets.credentials(row));
    if (sending.message) headers.set("content-type", "application/json");
    if (sending.mcpName !== undefined) headers.set("mcp-name", sending.mcpName);
    if (sending.caller !== undefined) headers.set(CALLER_HEADER, sending.caller);
    // The listing must be read to be rewritten: ask for it uncompressed.
    if (sending.uncompressed) headers.delete("accept-encoding");
    const span = observation.upstream(target.url, headers);
    let forwarded: Forwarded;
    try {
      forwarded = await forward(request, target.url, headers, options, sending.body);
    } catch (e) {
      span?.end(undefined, (e as Error).message);
      throw e;
    }
    span?.end({ "http.response.status_code": forwarded.upstream.status });
    const { status } = forwarded.upstream;
    if (status === 401) {
      const spare = sending.body instanceof Uint8Array ? sending.body : null;
      forwarded = await unauthorized(row, target, request, headers, options, forwarded, spare);
    }
    if (row.auth_method === "oauth" && forwarded.upstream.status === 403) await insufficientScope(row, forwarded);
    return forwarded;
  };
}
export type Sender = ReturnType<typeof createSender>;
