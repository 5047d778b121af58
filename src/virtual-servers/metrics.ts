import type { Registry } from "../metrics/registry";
import { LISTS } from "./merge";
import { ROUTED } from "./route";

/**
 * How many virtual servers get series of their own in one process. Their ids are bounded already — at most
 * VIRTUAL__MAX_PER_USER (100) per user, so users × 100 — and only those whose members were called since the process
 * started have series (a deleted one's stay until a restart). A deployment of many users could still reach tens of
 * thousands: past this many, the rest are counted together as `other`, so a scrape stays a bounded size.
 */
export const MAX_VIRTUAL_SERVER_SERIES = 1000;
export const OTHER = "other";

/** The methods a virtual server sends its members (its session's, its listings, its routed calls); others are `other`. */
const METHODS: ReadonlySet<string> = new Set([
  "initialize",
  "notifications/initialized",
  "ping",
  ...Object.values(LISTS).map((list) => list.method),
  ...Object.keys(ROUTED),
  // What it passes on for its client (sessions.ts receive); its answers to a member's requests have no method.
  "notifications/cancelled",
  "notifications/roots/list_changed",
]);

/** The buckets of the proxy's upstream latency (app.ts), up to a minute: a routed call may take as long (route.ts). */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export type MemberOutcome = "result" | "error" | "http" | "rate_limited";

/**
 * virtual_server_member_requests_total{virtual_server, method, outcome} and
 * virtual_server_member_request_duration_seconds{virtual_server}: each message a virtual server sent one of its members
 * through the member's proxy URL (what its audit records count), observed by the proxy (proxy/observe.ts).
 */
export function createVirtualServerMetrics(registry: Registry) {
  const requests = registry.labelledCounter(
    "virtual_server_member_requests_total",
    "Messages virtual servers sent their members, by virtual server, JSON-RPC method and outcome (result, error: a JSON-RPC error, http: an HTTP status, rate_limited: a member's rate limit refused it)",
    ["virtual_server", "method", "outcome"],
  );
  const duration = registry.labelledHistogram(
    "virtual_server_member_request_duration_seconds",
    "Time from a virtual server's message to a member to the end of the member's answer",
    "virtual_server",
    BUCKETS,
  );
  const named = new Set<string>();
  const labelOf = (id: string) => {
    if (named.has(id)) return id;
    if (named.size >= MAX_VIRTUAL_SERVER_SERIES) return OTHER;
    named.add(id);
    return id;
  };
  return {
    observe(virtualServerId: string, method: string | null, outcome: MemberOutcome, seconds: number): void {
      const server = labelOf(virtualServerId);
      requests.inc([server, method !== null && METHODS.has(method) ? method : OTHER, outcome]);
      duration.observe(server, seconds);
    },
  };
}
export type VirtualServerMetrics = ReturnType<typeof createVirtualServerMetrics>;
