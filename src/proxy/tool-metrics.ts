import type { Registry } from "../metrics/registry";

/** The label of the tools (and connectors) past the bound: counted together. */
export const OTHER = "other";

/**
 * Connectors with series of their own in one process. Connectors are bounded per user already
 * (CONNECTOR__MAX_PER_USER), not in all; only those whose tools were called since the process started have series.
 */
export const MAX_CONNECTOR_SERIES = 1000;

/** The buckets of a call's duration, up to a minute (PROXY__UPSTREAM_TIMEOUT_SECONDS' default). */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export type ToolOutcome = "result" | "error" | "http" | "rate_limited";

/**
 * mcp_tool_calls_total, mcp_tool_errors_total, mcp_tool_rate_limited_total and mcp_tool_call_duration_seconds, each
 * {connector, tool}: the `tools/call` messages the proxy read (observe.ts). A tool's name comes from the client, so
 * the labels are bounded: the first `perConnector` (METRICS__TOOLS_PER_CONNECTOR) tools called at a connector get
 * series of their own, the rest are `other`. First come rather than the busiest: a counter's series cannot hand its
 * count to another when the ranking changes (Prometheus' rate() would read a reset), and the tools an agent uses most
 * are in practice among the first it calls.
 */
export function createToolMetrics(registry: Registry, perConnector: number) {
  const labels = ["connector", "tool"] as const;
  const calls = registry.labelledCounter(
    "mcp_tool_calls_total",
    "tools/call messages through the proxy by connector and tool (the rate-limited ones included)",
    labels,
  );
  const errors = registry.labelledCounter(
    "mcp_tool_errors_total",
    "tools/call messages answered with a JSON-RPC error or an HTTP error status, by connector and tool",
    labels,
  );
  const limited = registry.labelledCounter(
    "mcp_tool_rate_limited_total",
    "tools/call messages a rate limit refused (answered with isError, never sent on), by connector and tool",
    labels,
  );
  const duration = registry.multiLabelHistogram(
    "mcp_tool_call_duration_seconds",
    "Time from a tools/call sent on to the end of its answer, by connector and tool",
    labels,
    BUCKETS,
  );
  const tools = new Map<string, Set<string>>();
  const connectorLabel = (id: string) => (tools.has(id) || tools.size < MAX_CONNECTOR_SERIES ? id : OTHER);
  const toolLabel = (connector: string, tool: string) => {
    let named = tools.get(connector);
    if (!named) tools.set(connector, (named = new Set()));
    if (named.has(tool)) return tool;
    if (named.size >= perConnector) return OTHER;
    named.add(tool);
    return tool;
  };
  return {
    observe(connectorId: string, tool: string, outcome: ToolOutcome, seconds: number): void {
      const connector = connectorLabel(connectorId);
      const values = [connector, toolLabel(connector, tool)];
      calls.inc(values);
      if (outcome === "rate_limited") limited.inc(values);
      else {
        if (outcome !== "result") errors.inc(values);
        duration.observe(values, seconds);
      }
    },
  };
}
export type ToolMetrics = ReturnType<typeof createToolMetrics>;
