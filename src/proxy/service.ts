import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import type { ConnectorRow, ToolPinRow } from "../connectors/repository";
import type { ConnectorService } from "../connectors/service";
import type { Transitions } from "../connectors/transitions";
import { compileToolPolicy } from "../connectors/tool-policy";
import type { AuditEntry } from "../audit/service";
import type { Traced, Tracing } from "../observability/tracing";
import {
  AppError,
  Conflict,
  OAuthAuthorizationRequired,
  OAuthScopeRequired,
  UpstreamCredentialsRevoked,
  UpstreamFailed,
  InvalidToken,
} from "../http-errors/errors";
import type { Authorization } from "../oauth-client/authorization";
import { forward, type ForwardOptions, type Forwarded } from "../forward/forward";
import { upstreamRequestHeaders } from "../forward/headers";
import { streamCredential, type AccessWatch } from "../users/access-watch";
import type { Principal } from "../users/model";
import { describeRequest, tapResponse, type Described, type Observed } from "./audit-tap";
import type { CredentialCheck } from "./credential-check";
import { MCP_REQUEST_HEADERS } from "./headers";
import { declaredLength, type HeldBody, type HeldBytes } from "./held-bytes";
import { readMessage, serialiseMessage } from "./message";
import { filterRequest, rewriteResponse, type ToolView } from "./tool-filter";
import { createPinning } from "./tool-pins";
import type { StreamLimits } from "./stream-limits";
import type { Target, Targets } from "./target";

/** Request bodies up to this size (declared) are read whole before they are sent on, even when nothing reads them. */
const WHOLE_BODY_BYTES = 64 * 1024;

/** What the audit trail needs of the proxy: its records' sink (audit/service.ts), and whether to capture arguments. */
export type AuditSink = { capture: boolean; record(entry: AuditEntry): void };
/** One message's audit facts, filled in while it is relayed. */
type AuditTap = { capture: boolean; described?: Described; requestBytes: number };

export type ProxyServiceDeps = {
  /** OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT): a span per request, a child per upstream call; undefined when off. */
  tracing?: Tracing;
  /** The audit trail (AUDIT__ENABLED): one record per POSTed message; undefined when off. */
  audit?: AuditSink;
  connectors: ConnectorService;
  /** A connector's tool pins, and where a listing's tools are recorded (off the request: it does not wait). */
  pins: {
    list(connectorId: string): Promise<ToolPinRow[]>;
    record(row: ConnectorRow, seen: { name: string; digest: string }[], complete: boolean): Promise<void>;
  };
  transitions: Transitions;
  authorization: Authorization;
  targets: Targets;
  limits: StreamLimits;
  /** Request bodies held in memory: per message, per user, in all. */
  held: HeldBytes;
  /** Whether an upstream's 401 is a refusal of the connector's credentials (a fresh handshake). */
  credentialCheck: CredentialCheck;
  forward: ForwardOptions;
  clock: () => number;
  /** Ends a relayed event stream whose caller lost access (users/access-watch.ts). */
  watch?: AccessWatch;
};

export function createProxyService({
  tracing,
  audit,
  connectors,
  pins,
  transitions,
  authorization,
  targets,
  limits,
  held: heldBytes,
  credentialCheck,
  forward: baseOptions,
  clock,
  watch,
}: ProxyServiceDeps) {
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
      await authorization.afterChallenge(row, first.upstream);
      throw new OAuthAuthorizationRequired(
        "The MCP server now requires authorization: the connector is auth_required; open its auth_request.authorization_url, then retry",
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

  /** Sends one MCP request on, recovering from a 401 (refresh) or a 403 insufficient_scope as the connector allows. */
  async function relay(
    caller: Principal,
    row: ConnectorRow,
    request: Request,
    ended: () => void,
    tap?: AuditTap,
    traced?: Traced,
  ): Promise<Response> {
    const target = targets.target(row);
    if (!target) throw new UpstreamFailed("The connector's managed server is not running; it is being started again");
    const { url } = target;
    const options = target.fetch ? { ...baseOptions, fetch: target.fetch } : baseOptions;
    const headers = upstreamRequestHeaders(request.headers, MCP_REQUEST_HEADERS, await targets.credentials(row));
    const oauth = row.auth_method === "oauth";
    const view: ToolView | undefined = row.tool_policy
      ? {
          ...compileToolPolicy(row.tool_policy),
          ...(row.tool_policy.pin && {
            pinning: createPinning(row, await pins.list(row.id), (seen, complete) => void pins.record(row, seen, complete)),
          }),
        }
      : undefined;
    let listIds = new Set<string>();
    let body: ReadableStream<Uint8Array> | Uint8Array | null = request.method === "POST" ? request.body : null;
    let held: HeldBody | undefined;
    let forwarded: Forwarded;
    try {
      const declared = declaredLength(request);
      if (body && (view || tap)) {
        // Wherever the proxy decides on a body — the tool policy, pinning, the audit trail and the span that names the
        // method — it reads the message once, strictly (message.ts), and sends on the message it checked.
        held = await heldBytes.read(caller.id, request);
        if (tap) tap.requestBytes = held.bytes.byteLength;
        const read = readMessage(held.bytes, request.headers);
        if (!read.ok) {
          ended();
          return read.response;
        }
        let message = read.message;
        if (tap) tap.described = describeRequest(message, tap.capture);
        if (view) {
          const filtered = filterRequest(message, request.headers, view);
          if (filtered.kind === "answer") {
            ended();
            return filtered.response;
          }
          message = filtered.message;
          listIds = filtered.listIds;
          if (filtered.mcpName !== undefined) headers.set("mcp-name", filtered.mcpName);
          // The listing must be read to be rewritten: ask for it uncompressed.
          if (listIds.size > 0) headers.delete("accept-encoding");
        }
        body = serialiseMessage(message);
        headers.set("content-type", "application/json");
      } else if (
        body &&
        declared !== undefined &&
        declared <= (oauth ? heldBytes.maxMessageBytes : Math.min(WHOLE_BODY_BYTES, heldBytes.maxMessageBytes))
      ) {
        // A small body of declared length is sent faster as bytes than as a stream fetch must pipe (bench/RESULTS.md,
        // "Governance"); an OAuth connector keeps one up to a message's size, to replay it after a refresh. Either
        // streams instead when the held-bytes budget has no room for it.
        held = await heldBytes.readIfRoom(caller.id, request);
        if (held) body = held.bytes;
      }
      // The upstream call as a child span; the server hears of the trace through `traceparent` (W3C Trace Context).
      const upstreamSpan = traced?.child("mcp.upstream", { "server.address": url.host, "url.path": url.pathname }, "client");
      upstreamSpan?.inject(headers);
      try {
        forwarded = await forward(request, url, headers, options, body);
      } catch (e) {
        upstreamSpan?.end(undefined, (e as Error).message);
        throw e;
      }
      upstreamSpan?.end({ "http.response.status_code": forwarded.upstream.status });
      if (forwarded.upstream.status === 401)
        forwarded = await unauthorized(
          row,
          target,
          request,
          headers,
          options,
          forwarded,
          body instanceof Uint8Array ? body : null,
        );
    } finally {
      held?.release();
    }
    if (oauth && forwarded.upstream.status === 403) {
      const challenge = extractWWWAuthenticateParams(forwarded.upstream);
      if (challenge.error === "insufficient_scope" && challenge.scope) {
        await forwarded.upstream.body?.cancel();
        await authorization.upgradeScope(row, forwarded.upstream, challenge.scope);
        throw new OAuthScopeRequired(
          `The MCP server needs the scope "${challenge.scope}", which the connector was not granted: open the connector's auth_request.authorization_url to grant it`,
        );
      }
    }
    // An event stream lasts: it ends when the caller loses access (disabled, demoted, its token revoked).
    const relayed = await forwarded.respond(ended, watch && ((close) => watch.watch(streamCredential(request), caller, close)));
    return view && listIds.size > 0 ? rewriteResponse(relayed, listIds, view, heldBytes.maxMessageBytes) : relayed;
  }

  return {
    /** Ends the relayed notification (GET) streams; called when the service shuts down. */
    closeNotificationStreams(): number {
      const closers = [...baseOptions.streams];
      for (const close of closers) close();
      return closers.length;
    },

    /**
     * Relays one MCP request of `caller` to the connector's server (DESIGN.md "MCP proxy"), holding one of the
     * caller's and the connector's places (stream-limits.ts) until the exchange is over.
     */
    async handle(caller: Principal, id: string, request: Request): Promise<Response> {
      // [RFC 8707 §2](https://www.rfc-editor.org/rfc/rfc8707#section-2): an access token of this service's authorization server is for one connector's proxy URL.
      if (caller.connector !== undefined && caller.connector !== id)
        throw new InvalidToken("This access token was issued for another connector's MCP proxy URL");
      let row = await connectors.owned(caller, id, true);
      // The cached row may be up to a second behind a connect on another replica: a refusal is checked in the store.
      if (row.state !== "connected") row = await connectors.owned(caller, id);
      if (row.state !== "connected") {
        const why = row.disconnect_reason ? ` (${row.disconnect_reason})` : "";
        throw new Conflict(`The connector is ${row.state}${why}: connect it before sending MCP requests`);
      }
      const close = limits.open(caller.id, row.id);
      const traced = tracing?.server("mcp.proxy", request, {
        "mcp.connector.id": row.id,
        "enduser.id": caller.id,
        "http.request.method": request.method,
      });
      const tap: AuditTap | undefined =
        (audit || traced) && request.method === "POST" ? { capture: audit?.capture ?? false, requestBytes: 0 } : undefined;
      const startedAt = clock();
      const started = performance.now();
      const record = (httpStatus: number, observed: Observed) => {
        const described = tap?.described ?? { method: null, name: null };
        traced?.end(
          {
            "http.response.status_code": httpStatus,
            ...(described.method !== null && { "mcp.method.name": described.method }),
            ...(described.name !== null && {
              [described.method === "resources/read" ? "mcp.resource.uri" : "mcp.tool.name"]: described.name,
            }),
            ...(observed.errorCode !== null && { "rpc.jsonrpc.error_code": observed.errorCode }),
          },
          httpStatus >= 500 ? `HTTP ${httpStatus}` : undefined,
        );
        if (!audit) return;
        audit.record({
          caller,
          connectorId: row.id,
          method: described.method,
          name: described.name,
          outcome: observed.errorCode !== null ? "error" : httpStatus >= 400 ? "http" : "result",
          errorCode: observed.errorCode,
          httpStatus,
          startedAt,
          durationMs: performance.now() - started,
          requestBytes: tap?.requestBytes ?? 0,
          responseBytes: observed.bytes,
          ...(audit.capture && { captured: { arguments: described.arguments, result: observed.result } }),
        });
      };
      try {
        const response = await relay(caller, row, request, close, tap, traced);
        if (tap)
          return tapResponse(
            response,
            tap.capture,
            (observed) => record(response.status, observed),
            (bytes) => heldBytes.tryHold(caller.id, bytes),
          );
        traced?.end({ "http.response.status_code": response.status });
        return response;
      } catch (e) {
        close();
        const status = e instanceof AppError ? e.status : 500;
        if (tap) record(status, { errorCode: null, bytes: 0 });
        else traced?.end({ "http.response.status_code": status }, status >= 500 ? (e as Error).message : undefined);
        throw e;
      }
    },
  };
}
export type ProxyService = ReturnType<typeof createProxyService>;
