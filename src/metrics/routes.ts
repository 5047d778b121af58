import { Elysia, t } from "elysia";
import type { Registry } from "./registry";

export function metricsRoutes(registry: Registry) {
  return new Elysia({ detail: { tags: ["Health"] } }).get(
    "/metrics",
    async () => new Response(await registry.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } }),
    {
      response: { 200: t.String({ description: "Prometheus text exposition format" }) },
      detail: {
        summary: "Prometheus metrics",
        description: "Proxy requests by status, upstream latency, open streams, connectors by state. No credentials needed; no secrets in it.",
      },
    },
  );
}
