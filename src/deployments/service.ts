import type { SealedColumns } from "../connectors/sealed-columns";
import type { ConnectorRepository, ConnectorRow } from "../connectors/repository";
import type { Transitions } from "../connectors/transitions";
import { Conflict, TooManyRequests } from "../http-errors/errors";
import type { Logger } from "../observability/logger";
import type { PresetCatalog } from "../presets/catalog";
import { DeploymentFailed, type Runtime } from "../runtime/runtime";
import type { Job } from "../scheduler/scheduler";

export type DeploymentsDeps = {
  runtime: Runtime;
  presets: PresetCatalog;
  connectorRows: ConnectorRepository;
  sealed: SealedColumns;
  transitions: Transitions;
  clock: () => number;
  log: Logger;
  /** The store is shared by replicas (PostgreSQL): a local process would serve one replica only. */
  sharedStore: boolean;
};

/** Why managed connectors cannot run here, if they cannot: the local runtime on a store shared by replicas. */
export const localOnSharedStore = (driver: string, sharedStore: boolean) =>
  driver === "local" && sharedStore
    ? "Managed (mcp+stdio) servers need RUNTIME__DRIVER=kubernetes when the service runs on PostgreSQL: a local process would be reachable from one replica only"
    : undefined;

/** How long a managed deployment may stop serving before its connector is disconnected (docs/interface.md §5). */
export const NOT_READY_GRACE_MS = 60_000;

/**
 * Managed stdio connectors (`mcp+stdio://`) and the deployments that serve them: one made at connect, and a
 * reconciliation that keeps the runtime in line with the connectors — every connected managed connector has
 * a running deployment (after a restart they start again), and no deployment outlives its connection.
 */
export function createDeployments(deps: DeploymentsDeps) {
  const { runtime, transitions } = deps;
  const refused = localOnSharedStore(runtime.driver, deps.sharedStore);
  // Connectors whose deployment a connect is making now: reconciliation leaves them alone.
  const deploying = new Set<string>();
  const notReadySince = new Map<string, number>();

  /** The preset a managed connector runs (presets can change between starts). */
  const stdioOf = (row: ConnectorRow) => deps.presets.match(new URL(row.url))?.stdio;

  /** One log line per deployment started or stopped, with the connector and its owner (never its token). */
  const started = (row: ConnectorRow, image: string, why: string) =>
    deps.log.info("deployment started", { connector_id: row.id, owner_id: row.owner_id, image, why });
  const stopped = async (connectorId: string, why: string) => {
    await runtime.remove(connectorId);
    deps.log.info("deployment stopped", { connector_id: connectorId, why });
  };

  async function restart(row: ConnectorRow): Promise<void> {
    try {
      const stdio = stdioOf(row);
      if (!stdio) throw new DeploymentFailed(`no preset with a stdio configuration matches ${row.url} any more`);
      await runtime.deploy({ connectorId: row.id, ownerId: row.owner_id, stdio, accessToken: deps.sealed.accessToken(row) });
      started(row, stdio.image, "restarted by reconciliation");
    } catch (e) {
      if (e instanceof TooManyRequests) {
        // The owner's (or the service's) process cap is reached for now: not the server's fault; the next run retries.
        deps.log.warn("deployment deferred: no process place free", {
          connector_id: row.id,
          owner_id: row.owner_id,
          reason: e.detail,
        });
        return;
      }
      deps.log.warn("deployment failed to start", { connector_id: row.id, owner_id: row.owner_id, error: (e as Error).message });
      await transitions.disconnectIfConnected(row.id, `The managed server could not be restarted: ${(e as Error).message}`);
    }
  }

  /** A deployment that stopped serving (crash loop, evicted, image gone) gets a grace period to come back. */
  async function checkNotReady(row: ConnectorRow, reason: string): Promise<void> {
    const since = notReadySince.get(row.id) ?? deps.clock();
    notReadySince.set(row.id, since);
    if (deps.clock() - since < NOT_READY_GRACE_MS) return;
    notReadySince.delete(row.id);
    await stopped(row.id, `not serving for ${NOT_READY_GRACE_MS / 1000} s: ${reason}`);
    await transitions.disconnectIfConnected(row.id, `The managed server stopped serving: ${reason}`);
  }

  /** The scheduler's job, and the start-up's: makes the runtime match the connected managed connectors. */
  async function reconcile(): Promise<void> {
    const wanted = await deps.connectorRows.connectedManaged();
    const wantedIds = new Set(wanted.map((r) => r.id));
    const existing = await runtime.list();
    for (const id of existing.keys())
      if (!wantedIds.has(id) && !deploying.has(id)) await stopped(id, "no connected connector wants it");
    for (const row of wanted) {
      if (deploying.has(row.id)) continue;
      if (refused) {
        // Connected elsewhere (a database copied from SQLite, say): said once, in the connector's reason.
        await transitions.disconnectIfConnected(row.id, refused);
        continue;
      }
      const state = existing.get(row.id);
      if (state?.ready) notReadySince.delete(row.id);
      else if (state) await checkNotReady(row, state.reason);
      else await restart(row);
    }
  }

  return {
    /**
     * docs/interface.md §5: deploys the connector's preset (replacing any earlier deployment) and waits for it to
     * be ready (up to 60 s). Throws DeploymentFailed when it does not become ready.
     */
    async deploy(row: ConnectorRow, accessToken: string | null): Promise<void> {
      if (refused) throw new Conflict(refused);
      const stdio = stdioOf(row);
      if (!stdio) {
        throw new Conflict(
          `No preset with a stdio configuration matches ${row.url} any more: the service's CONNECTOR__PRESETS changed`,
        );
      }
      deploying.add(row.id);
      try {
        await runtime.deploy({ connectorId: row.id, ownerId: row.owner_id, stdio, accessToken });
        started(row, stdio.image, "connect");
      } catch (e) {
        deps.log.warn("deployment failed to start", {
          connector_id: row.id,
          owner_id: row.owner_id,
          error: (e as Error).message,
        });
        throw e;
      } finally {
        deploying.delete(row.id);
      }
    },

    reconcile,

    /** The scheduler's: the runtime brought in line on every tick, by one replica at a time (it acts on the runtime). */
    job: { name: "reconcile-deployments", onOneReplica: true, run: reconcile } satisfies Job,

    /** A connection ended: its deployment goes (in the background; a failure is logged, reconciliation retries). */
    remove(connectorId: string): void {
      void stopped(connectorId, "its connection ended").catch((e) =>
        deps.log.warn("could not remove a deployment", { connector_id: connectorId, error: (e as Error).message }),
      );
    },
  };
}
export type Deployments = ReturnType<typeof createDeployments>;
