import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

/**
 * OpenTelemetry traces, exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set —
 * the SDK's own exporter and batch processor, configured by the standard variables. Without them there is no tracer:
 * the callers hold `undefined` and do nothing, so tracing off costs nothing.
 */
export type TracingSettings = {
  /** OTLP/HTTP traces URL (`{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  serviceVersion: string;
  /** OTEL_BSP_SCHEDULE_DELAY: how long spans wait to be sent in a batch. */
  scheduleDelayMs: number;
};

const getter: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};
const setter: TextMapSetter<Headers> = { set: (headers, key, value) => headers.set(key, value) };
// Each span's context is passed by hand (no global context manager or propagator is registered).
const propagator = new W3CTraceContextPropagator();

/** One traced operation: child spans, the W3C `traceparent` for an outgoing request, and its end. */
export type Traced = {
  span: Span;
  /** A child span (for an upstream call: kind client). */
  child(name: string, attributes?: Attributes, kind?: "client" | "internal"): Traced;
  /** Writes `traceparent` (and `tracestate`) for this span into outgoing request headers ([W3C Trace Context](https://www.w3.org/TR/trace-context/)). */
  inject(headers: Headers): void;
  end(attributes?: Attributes, error?: string): void;
};

export type Tracing = {
  /** A server span for an incoming request, continuing the trace its `traceparent` names. */
  server(name: string, request: Request, attributes?: Attributes): Traced;
  /** A span of its own (connect, refresh), around `run`. */
  around<T>(name: string, attributes: Attributes, run: () => Promise<T>): Promise<T>;
  shutdown(): Promise<void>;
};

export function createTracing(settings: TracingSettings): Tracing {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": settings.serviceName, "service.version": settings.serviceVersion }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: settings.url, headers: settings.headers }),
        scheduledDelayMillis: settings.scheduleDelayMs,
      }),
    ],
  });
  const tracer = provider.getTracer("connector-service", settings.serviceVersion);

  function traced(span: Span, parent: Context): Traced {
    const own = trace.setSpan(parent, span);
    return {
      span,
      child: (name, attributes, kind = "internal") =>
        traced(
          tracer.startSpan(
            name,
            { kind: kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL, ...(attributes && { attributes }) },
            own,
          ),
          own,
        ),
      inject: (headers) => propagator.inject(own, headers, setter),
      end(attributes, error) {
        if (attributes) span.setAttributes(attributes);
        if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
        span.end();
      },
    };
  }

  return {
    server(name, request, attributes) {
      const parent = propagator.extract(context.active(), request.headers, getter);
      return traced(tracer.startSpan(name, { kind: SpanKind.SERVER, ...(attributes && { attributes }) }, parent), parent);
    },
    async around(name, attributes, run) {
      const span = tracer.startSpan(name, { attributes });
      try {
        return await run();
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
        throw e;
      } finally {
        span.end();
      }
    },
    shutdown: () => provider.shutdown(),
  };
}
