import type { AuditEntry } from "../audit/service";
import type { ConnectorRow } from "../connectors/repository";
import { AppError, RateLimited } from "../http-errors/errors";
import type { StatusCounter } from "../metrics/registry";
import type { Traced, Tracing } from "../observability/tracing";
import type { Principal } from "../users/model";
import type { VirtualServerMetrics } from "../virtual-servers/metrics";
import type { TakeWhole, TapStream } from "../forward/forward";
import { answerTap, readOutcome, wholeLength, wholeOutcome, type Observed } from "./answer-outcome";
import type { RpcMessage } from "./message";
import type { ToolMetrics } from "./tool-metrics";

/**
 * The last step of the hot path: one observer for what the proxy reports of its exchanges — the audit trail's record
 * (docs/behaviour.md "Audit trail"), the trace's spans (OpenTelemetry) and the count of answers by status — each from the same
 * message, read once (read.ts), and the same outcome, read from the answer as it passes (answer-outcome.ts).
 */

/** What the audit trail needs of the proxy: its records' sink (audit/service.ts), and whether to capture arguments. */
export type AuditSink = { capture: boolean; record(entry: AuditEntry): void };

export type ObserverDeps = {
  /** The audit trail (AUDIT__ENABLED): one record per POSTed message; undefined when off. */
  audit?: AuditSink;
  /** OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT): a span per request, a child per upstream call; undefined when off. */
  tracing?: Tracing;
  /** mcp_proxy_responses_total{status}: what the client got, the service's own answers included. */
  responses: StatusCounter;
  /** Counts the messages a virtual server sends its members (the caller's `virtualServer`); undefined: not counted. */
  virtualServers?: VirtualServerMetrics;
  clock: () => number;
  /** Holds an answer's bytes against the caller's budget while it is read (held-bytes.ts), else undefined. */
  hold: (userId: string, bytes: number) => (() => void) | undefined;
  /** Calls, errors, refusals and durations per connector and tool (tool-metrics.ts); undefined: not counted. */
  tools?: ToolMetrics;
};

/** The request's method and what it names, as the audit trail and the span record them. */
type Described = { method: string | null; name: string | null; arguments?: unknown };
const UNREAD: Described = { method: null, name: null };

/**
 * The request's method and what it names, from the message the proxy read (message.ts: its routing headers were
 * checked against it). A message that could not be read has neither: it never reached the server.
 */
export function describeRequest(message: RpcMessage | RpcMessage[] | undefined, capture: boolean): Described {
  if (message === undefined) return UNREAD;
  if (Array.isArray(message)) return { method: "batch", name: null };
  const params = message.params as { name?: unknown; uri?: unknown; arguments?: unknown } | undefined;
  const name = typeof params?.name === "string" ? params.name : typeof params?.uri === "string" ? params.uri : null;
  return {
    method: typeof message.method === "string" ? message.method : null,
    name,
    ...(capture && params?.arguments !== undefined && { arguments: params.arguments }),
  };
}

/** One exchange as the observer follows it, told each step's result in turn. */
export type Observation = {
  /**
   * Whether the exchange's message is read for the observer: a POST while the audit trail or tracing is on, or one a
   * virtual server sent (its metrics).
   */
  readonly reads: boolean;
  /** The message as read (undefined: it could not be read), and the size of the body as it came. */
  read(message: RpcMessage | RpcMessage[] | undefined, bytes: number): void;
  /** The upstream call's span (tracing on): a child of the exchange's, named in the outgoing headers (W3C Trace Context). */
  upstream(url: URL, headers: Headers): Traced | undefined;
  /** A plain JSON answer the observer reads whole, taken before it is relayed (forward.ts); undefined: nothing to read. */
  readonly takeWhole: TakeWhole | undefined;
  /** An event stream the observer reads as it is relayed (forward.ts), in the client's own stream; undefined: nothing to read. */
  readonly tapStream: TapStream | undefined;
  /** The answer the client gets, observed as it passes: the record is made when it has passed. */
  answered(response: Response): Promise<Response>;
  /** The exchange ended in `error` before an answer. */
  failed(error: unknown): void;
  /** A rate limit answered it in the server's place (rate-check.ts): recorded as `rate_limited`. */
  rateLimited(): void;
};

/** An exchange nothing observes (audit trail and tracing off, or a GET with the audit trail only): nothing to do. */
const UNOBSERVED: Observation = {
  reads: false,
  read: () => undefined,
  upstream: () => undefined,
  takeWhole: undefined,
  tapStream: undefined,
  answered: async (response) => response,
  failed: () => undefined,
  rateLimited: () => undefined,
};

export function createObserver({ audit, tracing, responses, virtualServers, clock, hold, tools }: ObserverDeps) {
  const capture = audit?.capture ?? false;

  class ExchangeObservation implements Observation {
    readonly startedAt = clock();
    readonly started = performance.now();
    described = UNREAD;
    bytes = 0;
    limited = false;
    /** The answer, when it was taken whole. */
    answer: Uint8Array | undefined;
    /** Whether the answer's stream is read as it is relayed (its end makes the record). */
    tapped = false;
    readonly takeWhole: TakeWhole | undefined;
    readonly tapStream: TapStream | undefined;
    constructor(
      readonly caller: Principal,
      readonly connectorId: string,
      readonly reads: boolean,
      readonly traced: Traced | undefined,
    ) {
      this.takeWhole = reads ? (upstream) => this.holdAnswer(upstream) : undefined;
      this.tapStream = reads ? (upstream) => this.tapAnswer(upstream) : undefined;
    }

    /** Reads an event stream as it is relayed: the record is made at its end. */
    tapAnswer(upstream: Response) {
      this.tapped = true;
      return answerTap(false, capture, (observed) => this.end(upstream.status, observed));
    }

    /** Holds a JSON answer of declared length against the caller's budget while it is read whole. */
    holdAnswer(upstream: Response) {
      const length = wholeLength(upstream.headers);
      const release = length === undefined ? undefined : hold(this.caller.id, length);
      return release && { take: (bytes: Uint8Array) => void (this.answer = bytes), release };
    }

    read(message: RpcMessage | RpcMessage[] | undefined, bytes: number): void {
      this.described = describeRequest(message, capture);
      this.bytes = bytes;
    }

    upstream(url: URL, headers: Headers): Traced | undefined {
      if (!this.traced) return undefined;
      const span = this.traced.child("mcp.upstream", { "server.address": url.host, "url.path": url.pathname }, "client");
      span.inject(headers);
      return span;
    }

    async answered(response: Response): Promise<Response> {
      if (!this.reads) {
        this.traced?.end({ "http.response.status_code": response.status });
        return response;
      }
      if (this.answer) {
        this.end(response.status, wholeOutcome(this.answer, capture));
        return response;
      }
      if (this.tapped) return response;
      const userId = this.caller.id;
      return readOutcome(
        response,
        capture,
        (observed) => this.end(response.status, observed),
        (bytes) => hold(userId, bytes),
      );
    }

    rateLimited(): void {
      this.limited = true;
    }

    failed(error: unknown): void {
      if (error instanceof RateLimited) this.limited = true;
      const status = error instanceof AppError ? error.status : 500;
      if (this.reads) this.end(status, { errorCode: null, bytes: 0 });
      else this.traced?.end({ "http.response.status_code": status }, status >= 500 ? (error as Error).message : undefined);
    }

    /** The record of a POSTed message: its span's end, and the audit trail's entry. */
    end(httpStatus: number, observed: Observed): void {
      const described = this.described;
      this.traced?.end(
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
      const outcome = this.limited
        ? "rate_limited"
        : observed.errorCode !== null
          ? "error"
          : httpStatus >= 400
            ? "http"
            : "result";
      const durationMs = performance.now() - this.started;
      if (described.method === "tools/call" && described.name !== null)
        tools?.observe(this.connectorId, described.name, outcome, durationMs / 1000);
      if (this.caller.virtualServer !== undefined)
        virtualServers?.observe(this.caller.virtualServer, described.method, outcome, durationMs / 1000);
      audit?.record({
        caller: this.caller,
        connectorId: this.connectorId,
        method: described.method,
        name: described.name,
        outcome,
        errorCode: observed.errorCode,
        httpStatus,
        startedAt: this.startedAt,
        durationMs,
        requestBytes: this.bytes,
        responseBytes: observed.bytes,
        ...(capture && { captured: { arguments: described.arguments, result: observed.result } }),
      });
    }
  }

  return {
    /** An admitted exchange, observed from here to its end. */
    begin(caller: Principal, row: ConnectorRow, request: Request): Observation {
      const traced = tracing?.server("mcp.proxy", request, {
        "mcp.connector.id": row.id,
        "enduser.id": caller.id,
        "http.request.method": request.method,
        ...(caller.virtualServer !== undefined && { "mcp.virtual_server.id": caller.virtualServer }),
      });
      const counted = virtualServers !== undefined && caller.virtualServer !== undefined;
      // Per-tool metrics ride on a message read anyway (a tool policy, a tool's rate limit): they never make the
      // proxy read a body it would stream unread.
      const readAnyway = tools !== undefined && (row.tool_policy !== null || row.rate_limits?.tools !== undefined);
      const reads = request.method === "POST" && (audit !== undefined || traced !== undefined || counted || readAnyway);
      return reads || traced ? new ExchangeObservation(caller, row.id, reads, traced) : UNOBSERVED;
    },
    /** Every answer at a proxy URL, the proxy's own refusals included (entry.ts). */
    count(status: number): void {
      responses.inc(status);
    },
  };
}
export type Observer = ReturnType<typeof createObserver>;
