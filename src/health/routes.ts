import { Elysia, t } from "elysia";
import { ServiceUnavailable } from "../http-errors/errors";
import { Problem } from "../http-errors/model";
import { problemResponse } from "../http-errors/problem";

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
      () => {
        const state = readiness();
        return state.ready ? { status: "ok" as const } : problemResponse(new ServiceUnavailable(state.reason));
      },
      {
        response: { 200: Health, 503: Problem },
        detail: { summary: "Readiness: the database is open and the service accepts work" },
      },
    );
}
