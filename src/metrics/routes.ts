import { Elysia, t, type TSchema } from "elysia";
import { METRICS_CHALLENGE, scrapeAccess } from "./access";
import type { Registry } from "./registry";

export type MetricsRouteOptions = {
  /** METRICS__TOKEN: when set, a scrape must send it as a bearer token. */
  token: string | undefined;
  /**
   * The 401 to throw for a refused scrape, with `challenge` as its WWW-Authenticate (built by the caller: the
   * problem types live above this layer, in http-errors/).
   */
  refuse: (detail: string, challenge: string) => Error;
  /** The problem document's schema, for the 401 in OpenAPI. */
  problem: TSchema;
};

export function metricsRoutes(registry: Registry, options: MetricsRouteOptions) {
  const refused = scrapeAccess(options.token);
  return new Elysia({ detail: { tags: ["Health"] } }).get(
    "/metrics",
    async ({ request }) => {
      // Before any work: a refused scrape reads nothing, not even the database.
      const why = refused(request.headers.get("authorization"));
      if (why === "missing")
        throw options.refuse("This service's metrics need METRICS__TOKEN as a bearer token", METRICS_CHALLENGE);
      if (why === "wrong")
        throw options.refuse("The bearer token is not METRICS__TOKEN", `${METRICS_CHALLENGE}, error="invalid_token"`);
      return new Response(await registry.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
    },
    {
      response: { 200: t.String({ description: "Prometheus text exposition format" }), 401: options.problem },
      detail: {
        summary: "Prometheus metrics",
        description:
          "Proxy requests by the status the client got and by the upstream's status, upstream latency, open streams, OAuth token refreshes by outcome, connectors by state, virtual servers' messages to their members by method and outcome with their duration, tool calls per connector and tool (calls, errors, rate-limited, duration; METRICS__TOOLS_PER_CONNECTOR tools each, the rest as other), rate-limit refusals by limit, process memory, CPU time and open files, and the running version. " +
          'Open when METRICS__TOKEN is unset; when it is set, send `Authorization: Bearer <METRICS__TOKEN>`, else 401 with `WWW-Authenticate: Bearer realm="metrics"`. No secrets in it.',
      },
    },
  );
}
