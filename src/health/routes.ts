import { Elysia, t } from "elysia";
import { ServiceUnavailable } from "../http-errors/errors";
import { Problem } from "../http-errors/model";

export type Readiness = () => { ready: true } | { ready: false; reason: string };

/** How long `/readyz` waits for the database to answer before it says it cannot be reached. */
export const DATABASE_PING_TIMEOUT_MS = 2_000;

/** Whether the store answers a trivial query in time (a replica whose database is gone must leave the balancer). */
async function databaseAnswers(store: { ping(): Promise<void> }): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), DATABASE_PING_TIMEOUT_MS)));
  try {
    return await Promise.race([
      store.ping().then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const Health = t.Object({ status: t.Literal("ok") });

export function healthRoutes(readiness: Readiness, store: { ping(): Promise<void> }) {
  return new Elysia({ detail: { tags: ["Health"] } })
    .get("/healthz", () => ({ status: "ok" as const }), {
      response: { 200: Health },
      detail: { summary: "Liveness: the process is up" },
    })
    .get(
      "/readyz",
      async () => {
        const state = readiness();
        if (!state.ready) throw new ServiceUnavailable(state.reason);
        if (!(await databaseAnswers(store))) throw new ServiceUnavailable("The database cannot be reached");
        return { status: "ok" as const };
      },
      {
        response: { 200: Health, 503: Problem },
        detail: { summary: "Readiness: the database answers and the service accepts work" },
      },
    );
}
