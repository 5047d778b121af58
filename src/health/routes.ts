import { Elysia, t } from "elysia";
import { Problem } from "../http-errors/model";

export type Readiness = () => { ready: true } | { ready: false; reason: string };

const Health = t.Object({ status: t.Literal("ok") });

export function healthRoutes(readiness: Readiness) {
  return new Elysia({ detail: { tags: ["Health"] } })
    .get("/healthz", () => ({ status: "ok" as const }), {
      response: { 200: Health },
      detail: { summary: "Liveness: the process is up" },
    })
    .get(
      "/readyz",
      ({ set }) => {
        const state = readiness();
        if (state.ready) return { status: "ok" as const };
        set.status = 503;
        set.headers["content-type"] = "application/problem+json";
        return { type: "/problems/not-ready", title: "Not ready", status: 503, detail: state.reason };
      },
      {
        response: { 200: Health, 503: Problem },
        detail: { summary: "Readiness: the database is open and the service accepts work" },
      },
    );
}
