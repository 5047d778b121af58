import type { ConnectorService } from "../connectors/service";
import type { Transitions } from "../connectors/transitions";
import type { ForwardOptions, StreamWatch } from "../forward/forward";
import { UpstreamFailed } from "../http-errors/errors";
import type { StatusCounter } from "../metrics/registry";
import type { Authorization } from "../oauth-client/authorization";
import type { Tracing } from "../observability/tracing";
import type { VirtualServerMetrics } from "../virtual-servers/metrics";
import type { AccessWatch } from "../users/access-watch";
import type { Principal } from "../users/model";
import type { EraBridges } from "../era-bridge/bridges";
import type { LegacySessions } from "../era-bridge/legacy-sessions";
import { createAdmission, type Admitted } from "./admit";
import { callerDigest } from "../gateway/caller";
import { heldAnswer } from "../http/held-answer";
import type { CredentialCheck } from "./credential-check";
import type { HeldBytes } from "./held-bytes";
import { readMessage, serialiseMessage } from "./message";
import { createRateCheck, type RateCheckDeps } from "./rate-check";
import { createObserver, type AuditSink, type Observation } from "./observe";
import { createToolViews, type PinStore } from "./policy";
import { createRequestReader, type Outgoing } from "./read";
import { createSender, type Sending } from "./send";
import type { StreamLimits } from "./stream-limits";
import type { Targets } from "./target";
import type { ToolMetrics } from "./tool-metrics";
import { filterRequest, rewriteResponse } from "./tool-filter";

export type { AuditSink } from "./observe";

/**
 * `policy: false` leaves the tool policy and pinning out (the owner's own listing, server-tools.ts); `internal`: sent
 * by another of the service's parts as the caller (a virtual server's member, a bridge), not by a client at the entry.
 */
type ExchangeOptions = { policy: boolean; internal: boolean };

export type ProxyServiceDeps = {
  /** OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT): a span per request, a child per upstream call; undefined when off. */
  tracing?: Tracing;
  /** The audit trail (AUDIT__ENABLED): one record per POSTed message; undefined when off. */
  audit?: AuditSink;
  /** mcp_proxy_responses_total{status}: what the client got, the service's own answers included. */
  responses: StatusCounter;
  /** Per virtual server, the messages it sends its members (virtual-servers/metrics.ts). */
  virtualServers?: VirtualServerMetrics;
  connectors: ConnectorService;
  pins: PinStore;
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
  /** Serves 2026-07-28 clients of servers that speak only the 2025 era (era-bridge/bridges.ts). */
  eraBridges?: Pick<EraBridges, "wants" | "serve" | "closeAll">;
  /** Serves 2025 clients of servers that speak only 2026-07-28, keeping their sessions (era-bridge/legacy-sessions.ts). */
  legacySessions?: Pick<LegacySessions, "wants" | "serve" | "closeAll">;
  /** Calls, errors, refusals and durations per connector and tool on /metrics (tool-metrics.ts). */
  tools?: ToolMetrics;
  /** Rate limits per user, connector and tool (rate-check.ts). */
  rates: RateCheckDeps;
};

/** A body held as bytes but not read: its message, read only when a rate limit refused it (rate-check.ts). */
function peek(outgoing: Outgoing, request: Request) {
  if (outgoing.kind !== "body" || !(outgoing.body instanceof Uint8Array)) return undefined;
  const read = readMessage(outgoing.body, request.headers);
  return read.ok ? read.message : undefined;
}

/**
 * The MCP proxy's hot path (docs/interface.md §6), one request at a time, as named steps:
 * admit (admit.ts) → read the message once (read.ts) → apply the tool policy (policy.ts, tool-filter.ts) → send,
 * recovering as the connector allows (send.ts) → observe (observe.ts), which follows the exchange from admission to
 * the end of its answer.
 */
export function createProxyService(deps: ProxyServiceDeps) {
  const { targets, held, watch } = deps;
  const admit = createAdmission(deps);
  const observer = createObserver({ ...deps, hold: held.tryHold });
  const viewOf = createToolViews(deps.pins);
  const readRequest = createRequestReader(held);
  const send = createSender(deps);
  const rateCheck = createRateCheck(deps.rates);

  /** One admitted exchange, from its request to the answer the client gets (before the observer reads it). */
  async function exchange(
    { caller, row, release }: Admitted,
    request: Request,
    observation: Observation,
    { policy, streamWatch }: { policy: boolean; streamWatch: StreamWatch | undefined },
  ): Promise<Response> {
    const target = targets.target(row);
    if (!target) throw new UpstreamFailed("The connector's managed server is not running; it is being started again");
    const view = policy ? await viewOf(row) : undefined;
    const outgoing = await readRequest(caller.id, request, {
      // A tool's rate limit decides on the tool a call names.
      decide: view !== undefined || observation.reads || row.rate_limits?.tools !== undefined,
      replay: row.auth_method === "oauth",
    });
    if (outgoing.kind === "refused") {
      observation.read(undefined, outgoing.bytes);
      release();
      return outgoing.response;
    }
    let listIds: Set<string> | undefined;
    let forwarded;
    try {
      if (outgoing.kind === "message") observation.read(outgoing.message, outgoing.bytes);
      // A DELETE ends a session, freeing what the server holds for it: never refused for a rate.
      let limited =
        request.method === "DELETE"
          ? undefined
          : rateCheck(caller, row, outgoing.kind === "message" ? outgoing.message : undefined, () => peek(outgoing, request));
      // Awaited only when it is a promise: on SQLite the check is synchronous (bench/proxy.ts --rate-limits).
      if (limited instanceof Promise) limited = await limited;
      if (limited) {
        observation.rateLimited();
        release();
        return limited.response;
      }
      let sending: Sending;
      if (outgoing.kind === "message") {
        let message = outgoing.message;
        let mcpName: string | undefined;
        if (view) {
          const decided = filterRequest(message, request.headers, view);
          if (decided.kind === "answer") {
            release();
            return decided.response;
          }
          ({ message, mcpName } = decided);
          if (decided.listIds.size > 0) listIds = decided.listIds;
        }
        const { serialised } = outgoing;
        const body = serialised !== undefined && message === outgoing.message ? serialised : serialiseMessage(message);
        sending = { body, message: true, uncompressed: listIds !== undefined, mcpName };
      } else sending = { body: outgoing.body, message: false, uncompressed: false };
      // A managed server's gateway tells its callers apart (a call parked for input is its caller's alone).
      if (target.managed) sending.caller = callerDigest(caller.id, caller.credential);
      forwarded = await send(row, target, request, sending, observation);
    } finally {
      outgoing.release();
    }
    // A listing the policy rewrites is observed as the client gets it, after the rewrite.
    if (listIds && view)
      return rewriteResponse(await forwarded.respond(release, streamWatch), listIds, view, held.maxMessageBytes);
    return forwarded.respond(release, streamWatch, observation);
  }

  return {
    /** Ends the 2026-07-28 bridges' upstream sessions; called when the service shuts down. */
    closeBridges: () => Promise.all([deps.eraBridges?.closeAll(), deps.legacySessions?.closeAll()]).then(() => undefined),

    /** Ends the relayed notification (GET) streams; called when the service shuts down. */
    closeNotificationStreams(): number {
      const closers = [...deps.forward.streams];
      for (const close of closers) close();
      return closers.length;
    },

    /** Counts an answer at a proxy URL, whoever gave it (entry.ts). */
    count: observer.count,

    /**
     * Relays one MCP request of `caller` to the connector's server, holding one of the caller's and the connector's
     * places (stream-limits.ts) until the exchange is over. `policy: false` leaves the tool policy and pinning out:
     * only the owner's own listing of the server's tools asks for that (server-tools.ts), to edit the policy.
     */
    async handle(
      caller: Principal,
      id: string,
      request: Request,
      { policy = true, internal = false }: Partial<ExchangeOptions> = {},
    ): Promise<Response> {
      const admitted = await admit(caller, id);
      // An event stream lasts: it ends when the caller loses access (disabled, demoted, its token revoked). An internal
      // request (a virtual server's or a bridge's, sent as the caller) carries no credential to check again: the
      // caller's own request at the entry is what is authenticated (a watch of none would cut it within a second).
      const streamWatch = watch && !internal ? watch.of(request, caller) : undefined;
      // The bridges' own requests come back here in the server's era, each admitted and observed as any other; the
      // caller's own answer holds its place while it streams and is watched like a relayed stream (held-answer.ts).
      const bridged = deps.eraBridges?.wants(admitted.row, request)
        ? () => deps.eraBridges!.serve(caller, id, request)
        : deps.legacySessions?.wants(admitted.row, request)
          ? // A 2025 request to a 2026-07-28-only server: the session is kept here, its requests go on in that era.
            () => deps.legacySessions!.serve(caller, id, request, { policy })
          : undefined;
      if (bridged) {
        try {
          return heldAnswer(await bridged(), admitted.release, streamWatch);
        } catch (e) {
          admitted.release();
          throw e;
        }
      }
      const observation = observer.begin(caller, admitted.row, request);
      try {
        return await observation.answered(await exchange(admitted, request, observation, { policy, streamWatch }));
      } catch (e) {
        admitted.release();
        observation.failed(e);
        throw e;
      }
    },
  };
}
export type ProxyService = ReturnType<typeof createProxyService>;
