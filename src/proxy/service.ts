import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import type { ConnectorRow, ToolPinRow } from "../connectors/repository";
import type { ConnectorService } from "../connectors/service";
import type { Transitions } from "../connectors/transitions";
import { compileToolPolicy } from "../connectors/tool-policy";
import type { AuditEntry } from "../audit/service";
import type { Traced, Tracing } from "../observability/tracing";
import { AppError, bodyTooLarge, Conflict, OAuthAuthorizationRequired, OAuthScopeRequired, UpstreamCredentialsRevoked, UpstreamFailed, InvalidToken } from "../http-errors/errors";
import type { Authorization } from "../oauth/authorization";
import { forward, type ForwardOptions, type Forwarded } from "../relay/forward";
import { relayedRequestHeaders } from "../relay/headers";
import type { Principal } from "../users/model";
import { readRequestCapped } from "../http/read-capped";
import { describeRequest, tapResponse, type Described, type Observed } from "./audit-tap";
import { MCP_REQUEST_HEADERS } from "./headers";
import { filterRequest, rewriteResponse, type FilteredRequest, type ToolView } from "./tool-filter";
import { createPinning } from "./tool-pins";
import type { StreamLimits } from "./stream-limits";
import type { Targets } from "./target";

/** Request bodies up to this size (declared) are read whole before they are sent on. */
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
  pins: { list(connectorId: string): Promise<ToolPinRow[]>; record(row: ConnectorRow, seen: { name: string; digest: string }[], complete: boolean): Promise<void> };
  transitions: Transitions;
  authorization: Authorization;
  targets: Targets;
  limits: StreamLimits;
  forward: ForwardOptions;
  clock: () => number;
};

export function createProxyService({ tracing, audit, connectors, pins, transitions, authorization, targets, limits, forward: baseOptions, clock }: ProxyServiceDeps) {
  /** The stored credentials stopped working: the caller gets a 502 (a 401 would blame its own credentials). */
  async function credentialsRejected(row: ConnectorRow, why: string): Promise<never> {
    const reason = `The MCP server rejected the ${why} (HTTP 401) at ${new Date(clock()).toISOString()}`;
    await transitions.disconnectIfConnected(row.id, reason);
    throw new UpstreamCredentialsRevoked(`${reason}; the connector is now disconnected: connect it again`);
  }

  /**
   * An OAuth connector's 401: refresh once (single flight per connector) and replay the request with the new
   * token — the body was teed, so a POST can be sent again. [MCP authorization (2025-11-25) §"Token Handling"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#token-handling).
   */
  async function retryAfterRefresh(request: Request, row: ConnectorRow, url: URL, headers: Headers, options: ForwardOptions, spare: ReadableStream<Uint8Array> | Uint8Array | null): Promise<Forwarded> {
    const rejected = headers.get("authorization")?.replace(/^Bearer /, "");
    const refreshed = await authorization.refresh(row.id, rejected);
    if (!refreshed.ok) {
      if (spare instanceof ReadableStream) await spare.cancel();
      return credentialsRejected(row, `access token and its refresh failed (${refreshed.failure.reason})`);
    }
    headers.set("authorization", `Bearer ${refreshed.accessToken}`);
    const retried = await forward(request, url, headers, options, spare);
    if (retried.upstream.status === 401) {
      await retried.upstream.body?.cancel();
      return credentialsRejected(row, "freshly refreshed access token");
    }
    return retried;
  }

  /** Sends one MCP request on, recovering from a 401 (refresh) or a 403 insufficient_scope as the connector allows. */
  async function relay(row: ConnectorRow, request: Request, ended: () => void, tap?: AuditTap, traced?: Traced): Promise<Response> {
    const target = targets.target(row);
    if (!target) throw new UpstreamFailed("The connector's managed server is not running; it is being started again");
    const { url } = target;
    const options = target.fetch ? { ...baseOptions, fetch: target.fetch } : baseOptions;
    const headers = relayedRequestHeaders(request.headers, MCP_REQUEST_HEADERS, await targets.credentials(row));
    const oauth = row.auth_method === "oauth";
    // A tool policy reads the request (tool-filter.ts); without one, the body streams through unread.
    const view: ToolView | undefined = row.tool_policy
      ? {
          ...compileToolPolicy(row.tool_policy),
          ...(row.tool_policy.pin && { pinning: createPinning(row, await pins.list(row.id), (seen, complete) => void pins.record(row, seen, complete)) }),
        }
      : undefined;
    let filtered: FilteredRequest | undefined;
    // The audit trail and a tool policy read the request; without either, the body streams through unread.
    let bytes: Uint8Array | undefined;
    // A 2026-07-28 request names its method (and tool) in headers: the audit trail then needs no body, unless it captures.
    const tapNeedsBody = tap !== undefined && (tap.capture || !request.headers.has("mcp-method"));
    // A small body of declared length is read whole and sent as bytes, which fetch sends faster than a stream it must
    // pipe (bench/RESULTS.md, "Governance"); a large or undeclared one streams.
    const declared = request.headers.get("content-length");
    const small = declared !== null && Number(declared) <= WHOLE_BODY_BYTES;
    if ((view || tapNeedsBody || small) && request.method === "POST" && request.body) {
      bytes = await readRequestCapped(request, options.maxBodyBytes);
      if (!bytes) throw bodyTooLarge(options.maxBodyBytes, "PROXY__MAX_BODY_BYTES");
    }
    if (tap && request.method === "POST") {
      tap.described = describeRequest(bytes, request.headers, tap.capture);
      tap.requestBytes = bytes?.byteLength ?? Number(request.headers.get("content-length") ?? 0);
    }
    if (view && bytes) {
      filtered = filterRequest(bytes, request.headers, view);
      if (filtered.kind === "answer") {
        ended();
        return filtered.response;
      }
      if (filtered.mcpName !== undefined) headers.set("mcp-name", filtered.mcpName);
      // The listing must be read to be rewritten: ask for it uncompressed.
      if (filtered.listIds.size > 0) headers.delete("accept-encoding");
    }
    const sent = filtered?.kind === "forward" ? filtered.body : bytes;
    // Only an OAuth connector can recover from a 401, by replaying: keep a copy of the body for that.
    const [body, spare] = sent ? [sent, oauth ? sent : null] : oauth && request.body ? request.body.tee() : [request.body, null];
    // The upstream call as a child span; the server hears of the trace through `traceparent` (W3C Trace Context).
    const upstreamSpan = traced?.child("mcp.upstream", { "server.address": url.host, "url.path": url.pathname }, "client");
    upstreamSpan?.inject(headers);
    let forwarded: Forwarded;
    try {
      forwarded = await forward(request, url, headers, options, body);
    } catch (e) {
      upstreamSpan?.end(undefined, (e as Error).message);
      throw e;
    }
    upstreamSpan?.end({ "http.response.status_code": forwarded.upstream.status });
    if (forwarded.upstream.status === 401) {
      await forwarded.upstream.body?.cancel();
      if (row.auth_method === "none" && !target.managed) {
        // An open server that now wants authorization (e.g. only for tools): the OAuth flow, as at connect.
        await authorization.afterChallenge(row, forwarded.upstream);
        throw new OAuthAuthorizationRequired(
          "The MCP server now requires authorization: the connector is auth_required; open its auth_request.authorization_url, then retry",
        );
      }
      if (!oauth) await credentialsRejected(row, "stored credentials");
      forwarded = await retryAfterRefresh(request, row, url, headers, options, spare);
    } else if (spare instanceof ReadableStream) {
      void spare.cancel();
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
    const relayed = forwarded.relay(ended);
    return view && filtered?.kind === "forward" ? rewriteResponse(relayed, filtered.listIds, view) : relayed;
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
      if (caller.connector !== undefined && caller.connector !== id) throw new InvalidToken("This access token was issued for another connector's MCP proxy URL");
      let row = await connectors.owned(caller, id, true);
      // The cached row may be up to a second behind a connect on another replica: a refusal is checked in the store.
      if (row.state !== "connected") row = await connectors.owned(caller, id);
      if (row.state !== "connected") {
        const why = row.disconnect_reason ? ` (${row.disconnect_reason})` : "";
        throw new Conflict(`The connector is ${row.state}${why}: connect it before sending MCP requests`);
      }
      const close = limits.open(caller.id, row.id);
      const traced = tracing?.server("mcp.proxy", request, { "mcp.connector.id": row.id, "enduser.id": caller.id, "http.request.method": request.method });
      const tap: AuditTap | undefined = (audit || traced) && request.method === "POST" ? { capture: audit?.capture ?? false, requestBytes: 0 } : undefined;
      const startedAt = clock();
      const started = performance.now();
      const record = (httpStatus: number, observed: Observed) => {
        const described = tap?.described ?? { method: null, name: null };
        traced?.end(
          {
            "http.response.status_code": httpStatus,
            ...(described.method !== null && { "mcp.method.name": described.method }),
            ...(described.name !== null && { [described.method === "resources/read" ? "mcp.resource.uri" : "mcp.tool.name"]: described.name }),
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
        const response = await relay(row, request, close, tap, traced);
        if (tap) return tapResponse(response, tap.capture, (observed) => record(response.status, observed));
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
