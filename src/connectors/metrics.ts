import type { Registry } from "../metrics/registry";
import { CONNECTOR_STATES } from "./model";
import type { ConnectorRepository } from "./repository";

/** connectors{state}: read from the store when scraped, every state at 0 when no connector is in it (stable series). */
export function registerConnectorMetrics(metrics: Registry, connectors: Pick<ConnectorRepository, "countByState">): void {
  metrics.gauge(
    "connectors",
    "Connectors by state",
    "state",
    async () => (await connectors.countByState()).map(({ state, count }) => [state, count]),
    CONNECTOR_STATES,
  );
}
